/**
 * People out of the logs: a logger that, before anything is written, replaces every identifier of
 * a person — a conversation key (`whatsapp:+34600…`, `web:<site>:<visitor>:<chat>`), a phone
 * number in E.164 form, an e-mail address, a field naming an address or contact — with an opaque
 * id (`~` and 16 hex of an HMAC-SHA256 keyed with `LOG_ID_SECRET`: nobody without the server's
 * secret can recompute it from a number), and drops the text of fields that carry what a person
 * wrote (`text`, `body`, `caption`, …: `[42 chars]`). The same person always gets the same id, so
 * an operator can follow one conversation; `npm run log-id -- <key, number or e-mail>` computes it
 * (docs/observability.md).
 */
import { createHmac } from 'node:crypto';
import type { LogFields, Logger, LogLevel } from './logger.js';

/** Fields whose string value is what a person wrote or sent: dropped, its length kept. */
const TEXT_FIELDS = new Set([
  'text',
  'body',
  'caption',
  'transcript',
  'transcription',
  'prompt',
  'system',
  'reply',
  'answer',
  'question',
  'comment',
  'content',
  'preview',
  'snippet',
  'samples',
  'choice',
  'usertext',
  'base64',
  'profilename',
]);
/** Fields whose string value identifies a person as a whole: replaced by its opaque id. */
const IDENTITY_FIELDS = new Set(['address', 'ip', 'from', 'to', 'email', 'phone', 'caller', 'customer', 'contact', 'userid', 'visitorid', 'whatsapp']);

/** An identity field's value that is an address (a number, an e-mail, a key, an IP), not a word such as `customer`. */
const LOOKS_LIKE_ADDRESS = /[@:]|\d{3}/;
/** A conversation key, plain or URL-encoded (a request path): `whatsapp:+…`, `web:…`, `cli:…`. */
const CONVERSATION_KEY = /(?<![\p{L}\p{N}])(?:whatsapp|web|cli)(?::|%3A)[^\s"'`,;)}\]<>&?#/]+(?:(?::|%3A)[^\s"'`,;)}\]<>&?#/:]+)*/giu;
const EMAIL = /[\p{L}\p{N}._%+-]+(?:@|%40)[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)+/gu;
/** A number in E.164 form (what Twilio and the contact index use), plain or URL-encoded. */
const E164 = /(?:\+|%2B)[1-9]\d{6,14}(?!\d)/giu;

const MAX_DEPTH = 8;

/** The identity a value stands for, one spelling per person: a bare number is its WhatsApp address, an e-mail lower-cased. */
function canonical(value: string): string {
  let decoded = value.trim();
  try {
    decoded = decodeURIComponent(decoded);
  } catch {
    // Not URL-encoded after all: taken as written.
  }
  if (/^\+\d+$/.test(decoded)) return `whatsapp:${decoded}`;
  return decoded.includes('@') && !decoded.includes(':') ? decoded.toLowerCase() : decoded;
}

/** A person's opaque id in the logs: the same for their conversation key, their number and its URL-encoded form. */
export function logIdOf(value: string, secret: string): string {
  return `~${createHmac('sha256', secret).update(canonical(value)).digest('hex').slice(0, 16)}`;
}

/** Opaque ids a logger computed lately, by what they stand for: a turn names its conversation in many lines and children. */
const REMEMBERED_IDS = 10_000;

/** `logIdOf` with the last REMEMBERED_IDS answers kept (forgotten all at once when full). */
function rememberingLogIds(secret: string): (value: string) => string {
  const known = new Map<string, string>();
  return (value) => {
    let id = known.get(value);
    if (id === undefined) {
      if (known.size >= REMEMBERED_IDS) known.clear();
      id = logIdOf(value, secret);
      known.set(value, id);
    }
    return id;
  };
}

/** Every identifier in a string replaced by its opaque id. */
function withoutIdentifiers(text: string, id: (value: string) => string): string {
  if (!/[:@%+]/.test(text)) return text;
  const replace = (match: string) => id(match);
  return text.replace(CONVERSATION_KEY, replace).replace(EMAIL, replace).replace(E164, replace);
}

/**
 * A logger that writes no identifier of a person and no text a person wrote: each line's fields
 * (at any depth, error messages and child fields included) are cleaned before `inner` sees them.
 */
export function protectPeople(inner: Logger, secret: string): Logger {
  const id = rememberingLogIds(secret);
  const clean = (value: unknown, field: string, depth: number): unknown => {
    const name = field.toLowerCase();
    if (typeof value === 'string') {
      if (TEXT_FIELDS.has(name)) return `[${value.length} chars]`;
      return IDENTITY_FIELDS.has(name) && LOOKS_LIKE_ADDRESS.test(value) ? id(value) : withoutIdentifiers(value, id);
    }
    if (value === null || typeof value !== 'object') return value;
    if (depth >= MAX_DEPTH) return '[too deep]';
    if (value instanceof Error) {
      const cause = value.cause === undefined ? {} : { cause: clean(value.cause, 'cause', depth + 1) };
      return { name: value.name, message: withoutIdentifiers(value.message, id), ...cause };
    }
    if (Array.isArray(value)) return value.map((item) => clean(item, field, depth + 1));
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') return clean(toJSON.call(value), field, depth + 1);
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [withoutIdentifiers(key, id), clean(item, key, depth + 1)]));
  };
  const fieldsOf = (fields: LogFields | undefined) => (fields ? (clean(fields, '', 0) as LogFields) : undefined);
  /**
   * `made()` gives the inner logger; a child's is made (its fields cleaned, the inner child built)
   * only when a line of it is first written: most children of a turn write nothing at the
   * service's level. A child writes at its parent's level (`Logger.child` sets none of its own).
   */
  const protecting = (made: () => Logger, enabled: (level: LogLevel) => boolean): Logger => {
    const write = (level: LogLevel, event: string, fields: LogFields | undefined) => {
      if (enabled(level)) made()[level](event, fieldsOf(fields));
    };
    return {
      debug: (event, fields) => write('debug', event, fields),
      info: (event, fields) => write('info', event, fields),
      warn: (event, fields) => write('warn', event, fields),
      error: (event, fields) => write('error', event, fields),
      child: (fields) => {
        // As they are now (a caller may change its object later), cleaned when first needed.
        const bound = { ...fields };
        let child: Logger | undefined;
        return protecting(() => (child ??= made().child(fieldsOf(bound) ?? {})), enabled);
      },
      enabled,
    };
  };
  return protecting(
    () => inner,
    (level) => inner.enabled(level),
  );
}
