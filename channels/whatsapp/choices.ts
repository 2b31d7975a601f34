/**
 * Choices on WhatsApp: a question with up to 3 short answers goes as a quick-reply message, up
 * to 10 as a list message, through Twilio's Content API. The service creates the session content
 * it needs once per shape (kind and labels, and a list's language, whose button word it shows;
 * the question and the answers' ids are variables) and caches its SID in this process and in
 * Redis for the others; within the 24-hour window it needs no approval. The customer's tap comes
 * back on the webhook as `ButtonPayload` / `ListId`.
 * Whatever can't go as Content (too many or too long answers, Content refused or unreachable)
 * goes as the numbered text every question carries, and a typed answer works the same.
 */
import { createHash } from 'node:crypto';
import type twilio from 'twilio';
import type { ContentCreateRequest } from 'twilio/lib/rest/content/v1/content.js';
import type { Logger } from '../../src/logger.js';
import type { Metrics } from '../../src/metrics.js';
import { KEY_PREFIX, type RedisClient } from '../../src/redis.js';
import type { Choice } from '../../src/contracts/tool.js';
import { languageOf, type Language } from '../../src/words/language.js';
import { serviceWords } from '../../src/words/service-words.js';

const QUICK_REPLY_MAX = 3;
const QUICK_REPLY_TITLE_CHARS = 20;
const LIST_MAX = 10;
const LIST_ITEM_CHARS = 24;
const BODY_CHARS = 1024;
/** Where every process finds the Content SIDs made so far for one Twilio account (one hash: shape digest → SID). */
const contentCacheKey = (account: string) => `${KEY_PREFIX}:whatsapp:choice-content:${createHash('sha256').update(account).digest('hex').slice(0, 16)}`;

/**
 * What one Content resource is made for. A list names its language (its button says "Choose" in
 * it) unless English: an English list's digest stays what it was before lists had a language.
 * A quick reply has no words of its own, so one resource serves every language.
 */
interface Shape {
  kind: 'quick-reply' | 'list';
  labels: string[];
  language?: Exclude<Language, 'en'>;
}

function shapeOf(choices: readonly Choice[], body: string, language: Language): Shape | undefined {
  if (choices.length === 0 || body.length > BODY_CHARS) return undefined;
  const labels = choices.map((choice) => choice.label);
  if (choices.length <= QUICK_REPLY_MAX && labels.every((label) => label.length <= QUICK_REPLY_TITLE_CHARS)) return { kind: 'quick-reply', labels };
  if (choices.length <= LIST_MAX && labels.every((label) => label.length <= LIST_ITEM_CHARS)) {
    return { kind: 'list', labels, ...(language !== 'en' ? { language } : {}) };
  }
  return undefined;
}

/** The Content resource of a shape: `{{1}}` the question, `{{2}}`… each answer's id. */
function contentRequest(shape: Shape, name: string): Record<string, unknown> {
  const variables: Record<string, string> = { '1': 'Question' };
  shape.labels.forEach((_, index) => (variables[String(index + 2)] = `choice-${index + 1}`));
  const types =
    shape.kind === 'quick-reply'
      ? { 'twilio/quick-reply': { body: '{{1}}', actions: shape.labels.map((title, index) => ({ type: 'QUICK_REPLY', title, id: `{{${index + 2}}}` })) } }
      : {
          'twilio/list-picker': {
            body: '{{1}}',
            button: serviceWords(shape.language ?? 'en').listButton,
            items: shape.labels.map((item, index) => ({ item, id: `{{${index + 2}}}` })),
          },
        };
  return { friendly_name: name, language: shape.language ?? 'en', variables, types: { ...types, 'twilio/text': { body: '{{1}}' } } };
}

interface ChoiceContent {
  /** The Content SID and variables to send `body` with `choices` as (`language`: the question's ISO 639-1 code), or undefined (send the text). */
  contentFor(choices: readonly Choice[], body: string, language?: string): Promise<{ contentSid: string; contentVariables: string } | undefined>;
}

export function createChoiceContent(options: {
  client: twilio.Twilio;
  /** Whose Content resources these are (the account SID and API base URL): SIDs are never shared across accounts. */
  account: string;
  redis: RedisClient;
  logger: Logger;
  metrics: Metrics;
}): ChoiceContent {
  const { client, redis, logger, metrics } = options;
  const cacheKey = contentCacheKey(options.account);
  const known = new Map<string, string>();
  const making = new Map<string, Promise<string>>();

  const sidFor = async (shape: Shape): Promise<string> => {
    const digest = createHash('sha256').update(JSON.stringify(shape)).digest('hex').slice(0, 16);
    const cached = known.get(digest) ?? (await redis.hget(cacheKey, digest)) ?? undefined;
    if (cached) {
      known.set(digest, cached);
      return cached;
    }
    let pending = making.get(digest);
    if (!pending) {
      pending = (async () => {
        const created = await client.content.v1.contents.create(contentRequest(shape, `wa-assistant-choices-${digest}`) as unknown as ContentCreateRequest);
        await redis.hset(cacheKey, digest, created.sid);
        known.set(digest, created.sid);
        logger.info('choice-content-created', { kind: shape.kind, answers: shape.labels.length, contentSid: created.sid });
        return created.sid;
      })().finally(() => making.delete(digest));
      making.set(digest, pending);
    }
    return pending;
  };

  return {
    async contentFor(choices, body, language) {
      const shape = shapeOf(choices, body, languageOf(language));
      if (!shape) {
        metrics.increment('choices_sent_total', { channel: 'whatsapp', as: 'text' });
        return undefined;
      }
      try {
        const contentSid = await sidFor(shape);
        const variables: Record<string, string> = { '1': body };
        choices.forEach((choice, index) => (variables[String(index + 2)] = choice.id));
        metrics.increment('choices_sent_total', { channel: 'whatsapp', as: shape.kind });
        return { contentSid, contentVariables: JSON.stringify(variables) };
      } catch (error) {
        metrics.increment('choices_sent_total', { channel: 'whatsapp', as: 'text' });
        logger.warn('choice-content-unavailable', { kind: shape.kind, error });
        return undefined;
      }
    },
  };
}
