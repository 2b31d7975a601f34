/**
 * The satisfaction question (CSAT_ENABLED). Asked once — never twice within CSAT_COOLDOWN_HOURS —
 * after a teammate hands a conversation back (`handed_back`, a person took part), and after a
 * conversation the assistant handled alone went quiet for CSAT_AFTER_MINUTES since its last reply
 * (`quiet`: a check queued in `csat-queue.ts`; one that finds the history written since comes
 * again after it, and none is asked while a message waits in the inbox). Never while a
 * teammate holds the conversation or a hand-off waits for one, never while another question
 * waits for the customer (a choice or a confirmation the assistant asked: a typed "3" is that
 * question's answer), never outside the channel's free-text window (WhatsApp's 24 hours), never
 * when the service's last word was an apology for a failure. Asked in the widget's language, or
 * on WhatsApp the one the customer writes in. Five choices to tap (a WhatsApp list, the widget's
 * buttons) with their numbered lines, so a typed 1–5 answers too; then an optional comment
 * within CSAT_COMMENT_MINUTES (`csat-answers.ts`: the turn's judge says whether the words are one).
 *
 * The rating never reaches the model: the takeover hook's wrapper (`hook`) takes the batch before
 * its turn (no turn runs), stores it by `_id` in the `csat` collection (`csat-store.ts`) with the
 * conversation, its role and whether a person took part, and answers in the question's language.
 * Every message of it — the question, the rating, the service's answers — is part of the
 * conversation: its history the widget reads back and its transcript (`csat-transcript.ts`),
 * kept from the model.
 */
import { choiceLines } from '../contracts/choices.js';
import type { ChannelDefinition } from '../contracts/index.js';
import type { Choice } from '../contracts/tool.js';
import type { TakeoverHook } from '../takeover/takeover-inbound.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { GiveUpHandler } from '../queue/turn-worker.js';
import { csatWords } from '../words/csat-words.js';
import { languageOf, type Language } from '../words/language.js';
import { languageOfText } from '../words/text-language.js';
import type { CsatConversation, CsatState, PendingQuestion } from './csat-state.js';
import { csatRecordId, type CsatStore } from './csat-store.js';
import { createCsatAnswers, TAP_PREFIX, tapOf } from './csat-answers.js';
import { createCsatReplies } from './csat-replies.js';
import type { CsatTranscript } from './csat-transcript.js';

/** How long a question takes a rating: WhatsApp's window, after which nobody remembers it. */
const SCORE_WAIT_MS = 24 * 60 * 60 * 1000;

export interface CsatOptions {
  afterMs: number;
  cooldownMs: number;
  commentMs: number;
  state: CsatState;
  store: CsatStore;
  /** Puts the question's messages in the conversation's history and transcript, and sends the service's words. */
  transcript: CsatTranscript;
  channels: ReadonlyMap<string, ChannelDefinition>;
  /** Whether a teammate holds the conversation now (the takeover mirror). */
  heldByTeammate(conversationKey: string): Promise<boolean>;
  /** Whether a hand-off of the conversation is open or taken (a team is still to answer). */
  handoffOpen?(conversationKey: string): Promise<boolean>;
  /** Whether another question waits for the customer's answer (a choice or a confirmation the assistant asked). */
  questionWaiting?(conversationKey: string): Promise<boolean>;
  /** The role a hand-off was opened from. */
  handoffRole?(handoffId: string): Promise<string | undefined>;
  /** Queues the quiet check of a conversation for `delayMs` from now (`at`: the reply it follows). */
  scheduleQuiet(conversationKey: string, at: number, delayMs: number): Promise<void>;
  logger: Logger;
  metrics: Metrics;
  now?: () => number;
}

type AskDetails = { trigger: 'handed_back'; handoffId: string } | { trigger: 'quiet'; at: number };

/** The question's choices: scores 1 to 5, each id naming the question (a tap on an older one is told apart). */
function choicesOf(askedAt: number, language: Language): Choice[] {
  return csatWords(language).scores.map((label, index) => ({ id: `${TAP_PREFIX}${askedAt}:${index + 1}`, label }));
}

/** Why the question is not asked now, or undefined when it may be. */
async function refusalOf(
  options: Pick<CsatOptions, 'heldByTeammate' | 'handoffOpen' | 'questionWaiting'>,
  at: number,
  conversationKey: string,
  conversation: CsatConversation,
  channel: ChannelDefinition | undefined,
  details: AskDetails,
): Promise<string | undefined> {
  if (details.trigger === 'quiet') {
    if ((conversation.activityAt ?? 0) > details.at) return 'not-quiet';
    if (conversation.apologyAt !== undefined && conversation.apologyAt >= details.at) return 'apology';
  }
  if (!conversation.seen || !channel) return 'no-address';
  const window = channel.transport.freeformWindowMs;
  if (window !== undefined && at - (conversation.customerAt ?? 0) >= window) return 'window';
  if (await options.heldByTeammate(conversationKey)) return 'held';
  if (details.trigger === 'quiet' && (await options.handoffOpen?.(conversationKey))) return 'handoff-open';
  if (await options.questionWaiting?.(conversationKey)) return 'question-waiting';
  return undefined;
}

export function createCsat(options: CsatOptions) {
  const { state, store, logger, metrics } = options;
  const now = options.now ?? Date.now;
  const replies = createCsatReplies({ ...options, now });
  const { requeue } = replies;

  /** Asks the conversation's customer, once, if nothing forbids it now. */
  const ask = async (conversationKey: string, details: AskDetails, roleId?: string): Promise<boolean> => {
    const conversation = await state.read(conversationKey);
    const channel = conversation.seen ? options.channels.get(conversation.seen.channel) : undefined;
    const refused = await refusalOf(options, now(), conversationKey, conversation, channel, details);
    // Something happened since the reply this check follows (a later reply among it): checked again after it.
    if (refused === 'not-quiet') await requeue(conversationKey, conversation.activityAt ?? now(), conversation.askedAt);
    if (refused || !channel || !conversation.seen) {
      logger.debug('csat-not-asked', { conversationKey, trigger: details.trigger, reason: refused });
      return false;
    }
    const askedAt = now();
    // The widget says the visitor's language; on WhatsApp it is the one the customer writes in.
    const language = languageOf(conversation.seen.metadata.language, conversation.language);
    const pending: PendingQuestion = {
      id: csatRecordId(conversationKey, askedAt),
      stage: 'score',
      until: askedAt + SCORE_WAIT_MS,
      language,
      askedAt,
      channel: channel.id,
      roleId: roleId ?? conversation.role ?? 'unknown',
      withPerson: details.trigger === 'handed_back',
      trigger: details.trigger,
      ...(details.trigger === 'handed_back' ? { handoffId: details.handoffId } : {}),
    };
    // The customer writing meanwhile is checked again with the claim: a message in the inbox (its turn
    // running, or to come) keeps the question unasked, and the check comes again after it.
    const claim = await state.claimAsk(conversationKey, pending, options.cooldownMs, details.trigger === 'quiet' ? details.at : undefined);
    if (claim !== 'asked') {
      if (claim === 'not-quiet') await requeue(conversationKey, now(), conversation.askedAt);
      logger.debug('csat-not-asked', { conversationKey, trigger: details.trigger, reason: claim });
      return false;
    }
    const choices = choicesOf(askedAt, language);
    const words = csatWords(language);
    await options.transcript.say(channel, {
      seen: conversation.seen,
      replyTo: `${conversationKey}:csat-${askedAt}-q`,
      part: 0,
      text: `${words.question}\n${choiceLines(choices)}`,
      extra: { choices, choicesLanguage: language },
    });
    metrics.increment('csat_total', { channel: channel.id, outcome: 'asked' });
    logger.info('csat-asked', { conversationKey, trigger: details.trigger });
    await store.asked(conversationKey, pending).catch((error: unknown) => logger.warn('csat-record-failed', { conversationKey, error }));
    return true;
  };

  const { answer, tapAgain, feedback, noted } = createCsatAnswers({ ...options, now });

  return {
    ask,
    feedback,

    /**
     * Wraps the takeover hook: a teammate's hand-back is followed by the question; a customer's
     * batch is noted (where from, when) and, when it answers the pending question, handled here
     * (true: no turn). A failure here never fails the turn: logged, and the batch goes on.
     */
    hook(inner: TakeoverHook | undefined): TakeoverHook {
      return async (batch, channel, turnLogger, context) => {
        const customer = batch.filter((message) => !message.teammate);
        const last = customer.at(-1);
        // The language the customer writes in, when their words show one (WhatsApp says none).
        const language = last?.metadata.language ? undefined : languageOfText(customer.map((message) => message.text).join('\n'));
        const tapping = customer.some((message) => tapOf(message) !== undefined);
        // Started before the inner hook: it joins the turn's open of the conversation.
        const noting = last
          ? state.noteInbound(last, language, tapping).catch((error: unknown) => (turnLogger.warn('csat-state-failed', { error }), undefined))
          : undefined;
        const handled = inner ? await inner(batch, channel, turnLogger, context) : false;
        const note = await noting;
        const pending = note?.pending;
        if (last) replies.found(last.conversationKey, note);
        // The turn's judge then asks Redis nothing to know no comment waits (no note: it asks).
        if (last) noted(last.conversationKey, note ? pending : undefined, note !== undefined);
        const entry = batch.length === 1 ? batch[0]?.teammate : undefined;
        const conversationKey = batch[0]?.conversationKey;
        if (handled && entry?.action === 'handed_back' && conversationKey) {
          const roleId = await options.handoffRole?.(entry.handoffId).catch(() => undefined);
          await ask(conversationKey, { trigger: 'handed_back', handoffId: entry.handoffId }, roleId).catch((error: unknown) =>
            turnLogger.warn('csat-ask-failed', { error }),
          );
        }
        if (handled || !last) return handled;
        if (!pending) {
          // A tap on a question that is no longer waiting: never a turn of its own.
          const tap = customer.length === 1 ? tapOf(last) : undefined;
          if (!tap) return false;
          await tapAgain(customer, channel, tap.askedAt, note?.rated, languageOf(last.metadata.language, note?.language)).catch((error: unknown) =>
            turnLogger.warn('csat-answer-failed', { error }),
          );
          return true;
        }
        try {
          const answered = await answer(customer, pending, channel);
          if (answered === 'handled') return true;
          // Anything else: the customer moved on; the question stops waiting.
          if (answered === 'none') await state.clearPending(last.conversationKey);
          return tapping && customer.length === 1;
        } catch (error) {
          turnLogger.warn('csat-answer-failed', { error });
          return false;
        }
      };
    },

    /** After each answered turn, inside it: the role that answered where it changed, the quiet check unless one is still to come (`csat-replies.ts`). */
    noteTurn: replies.noteTurn,

    /** Wraps the give-up handler: a conversation whose last word was an apology is not asked. */
    giveUp(inner: GiveUpHandler): GiveUpHandler {
      return async (batch, failure, assertHeld) => {
        await inner(batch, failure, assertHeld);
        await state.noteApology(batch.message.conversationKey, now()).catch((error: unknown) => logger.warn('csat-state-failed', { error }));
      };
    },
  };
}
