/**
 * Structured logging on pino: one JSON object per line on stdout (on a terminal, one readable
 * line per event through pino-pretty: time, level, event, then the fields as JSON). Events are noun-verb
 * (`turn-start`, `reply-sent`) in the `event` field. Tests swap the sink to capture lines instead
 * of printing them. Never log secrets or whole message bodies at info level: pino's `redact`
 * censors credential-shaped fields by path (`authorization`, `headers.authorization`, `token`,
 * ...), and since what upstream services put in their errors is not ours to trust,
 * `redactSecrets` also replaces every configured secret by value, wherever it appears.
 */
import { createHmac } from 'node:crypto';
import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
import pretty from 'pino-pretty';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(event: string, fields?: LogFields): void;
  info(event: string, fields?: LogFields): void;
  warn(event: string, fields?: LogFields): void;
  error(event: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
  /** Whether a line at this level is written (below it, a call costs nothing). */
  enabled(level: LogLevel): boolean;
}

export type LogSink = (line: string, level: LogLevel) => void;

/** Fields censored wherever a logged object (or one level below it) holds them. */
const REDACTED_PATHS = ['authorization', 'cookie', 'token', 'password', 'apiKey', 'secret'].flatMap((field) => [
  field,
  `*.${field}`,
  `headers.${field}`,
  `*.headers.${field}`,
]);

function serialize(value: unknown): unknown {
  if (value instanceof Error) {
    return { name: value.name, message: value.message, ...(value.cause ? { cause: serialize(value.cause) } : {}) };
  }
  return value;
}

function serializeFields(fields: LogFields | undefined): LogFields {
  const record: LogFields = {};
  for (const [key, value] of Object.entries(fields ?? {})) record[key] = serialize(value);
  return record;
}

/**
 * `resolve` gives the pino logger lines go to, made on the first line written: a pino child
 * serializes (and redacts) its fields when it is made, and most children — one per job, per
 * turn — never write a line above the level. Levels are the root's (children inherit them).
 */
function wrap(root: PinoLogger, resolve: () => PinoLogger): Logger {
  let resolved: PinoLogger | undefined;
  const inner = () => (resolved ??= resolve());
  // A line below the level costs nothing: its fields are not copied or serialized.
  const write = (level: LogLevel, event: string, fields: LogFields | undefined) => {
    if (root.isLevelEnabled(level)) inner()[level]({ event, ...serializeFields(fields) });
  };
  return {
    debug: (event, fields) => write('debug', event, fields),
    info: (event, fields) => write('info', event, fields),
    warn: (event, fields) => write('warn', event, fields),
    error: (event, fields) => write('error', event, fields),
    child: (fields) => {
      const bindings = serializeFields(fields);
      return wrap(root, () => inner().child(bindings));
    },
    enabled: (level) => root.isLevelEnabled(level),
  };
}

export function createLogger(options: { level?: LogLevel; sink?: LogSink; fields?: LogFields } = {}): Logger {
  const { sink } = options;
  // pino writes to a plain stream synchronously, inside the call: the level set just before
  // each write is the line's.
  let writing: LogLevel = 'info';
  const destination: DestinationStream = sink
    ? { write: (line: string) => sink(line.endsWith('\n') ? line.slice(0, -1) : line, writing) }
    : process.stdout.isTTY
      ? pretty({ sync: true, destination: 1, singleLine: true, translateTime: 'SYS:HH:MM:ss.l', messageFormat: '{event}', ignore: 'event' })
      : pino.destination({ dest: 1, sync: true });
  const root = pino(
    {
      level: options.level ?? 'info',
      base: null,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACTED_PATHS, censor: REDACTED },
      hooks: {
        logMethod(args, method, level) {
          writing = (this.levels.labels[level] ?? 'info') as LogLevel;
          method.apply(this, args);
        },
      },
    },
    destination,
  );
  const base = options.fields ? root.child(serializeFields(options.fields)) : root;
  return wrap(root, () => base);
}

const REDACTED = '[redacted]';
/** Shorter values are not matched: they would mask ordinary words, and no configured secret is this short. */
const MIN_SECRET_LENGTH = 8;
const MAX_DEPTH = 8;

/**
 * A logger that replaces each secret's value with `[redacted]` in every string it is given —
 * event fields at any depth, error messages and their causes, child fields — before `inner`
 * writes anything.
 */
export function redactSecrets(inner: Logger, secrets: readonly (string | undefined)[]): Logger {
  const values = [...new Set(secrets.filter((secret): secret is string => secret !== undefined && secret.length >= MIN_SECRET_LENGTH))]
    // Longest first, so a secret containing another is replaced whole.
    .sort((a, b) => b.length - a.length);
  if (values.length === 0) return inner;
  const scrub = (text: string) => values.reduce((result, secret) => result.replaceAll(secret, REDACTED), text);
  const clean = (value: unknown, depth: number): unknown => {
    if (typeof value === 'string') return scrub(value);
    if (value === null || typeof value !== 'object') return value;
    if (depth >= MAX_DEPTH) return '[too deep]';
    if (value instanceof Error) return clean(serialize(value), depth + 1);
    if (Array.isArray(value)) return value.map((item) => clean(item, depth + 1));
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') return clean(toJSON.call(value), depth + 1);
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [scrub(key), clean(item, depth + 1)]));
  };
  const fieldsOf = (fields: LogFields | undefined) => (fields ? (clean(fields, 0) as LogFields) : undefined);
  // The secrets are prepared once; each child (one per job, per turn) only wraps its logger.
  const scrubbing = (logger: Logger): Logger => {
    // Scrubbed only when the line is written.
    const write = (level: LogLevel, event: string, fields: LogFields | undefined) => {
      if (logger.enabled(level)) logger[level](scrub(event), fieldsOf(fields));
    };
    return {
      debug: (event, fields) => write('debug', event, fields),
      info: (event, fields) => write('info', event, fields),
      warn: (event, fields) => write('warn', event, fields),
      error: (event, fields) => write('error', event, fields),
      child: (fields) => scrubbing(logger.child(fieldsOf(fields) ?? {})),
      enabled: (level) => logger.enabled(level),
    };
  };
  return scrubbing(inner);
}

/** What names a person in a log line: a phone number (with or without `whatsapp:`), a widget conversation or visitor, an e-mail, a website user id. */
const PERSON_PATTERN =
  /whatsapp:\+\d{7,15}|\+\d{7,15}\b|\bweb:[A-Za-z0-9_-]+:[0-9a-f-]{8,64}(?::[0-9a-f-]{8,64})?|[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}|\b(?:user|ext):[A-Za-z0-9._@+-]+/g;

/** The key log ids are hashed with, derived from the service's link secret (the same in every process). */
export const logIdKey = (linkSecret: string) => createHmac('sha256', linkSecret).update('log-ids').digest('hex');

/** The opaque id a log line names a person by: a keyed hash of what named them (`npm run people -- export` lists a person's). */
export function personLogId(secret: string, identifier: string): string {
  return `p_${createHmac('sha256', secret).update(`log:${identifier}`).digest('base64url').slice(0, 12)}`;
}

/**
 * A logger that writes every number, widget conversation, e-mail and user id in its lines (fields
 * at any depth, error messages, child fields) as an opaque id (`personLogId`): a log names nobody,
 * yet one person's lines share their id. `LOG_PERSON_IDS=plain` leaves them as they are.
 */
export function pseudonymous(inner: Logger, secret: string): Logger {
  const scrub = (text: string) => text.replace(PERSON_PATTERN, (found) => personLogId(secret, found.startsWith('+') ? `whatsapp:${found}` : found));
  const clean = (value: unknown, depth: number): unknown => {
    if (typeof value === 'string') return scrub(value);
    if (value === null || typeof value !== 'object') return value;
    if (depth >= MAX_DEPTH) return '[too deep]';
    if (value instanceof Error) return clean(serialize(value), depth + 1);
    if (Array.isArray(value)) return value.map((item) => clean(item, depth + 1));
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') return clean(toJSON.call(value), depth + 1);
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, clean(item, depth + 1)]));
  };
  const fieldsOf = (fields: LogFields | undefined) => (fields ? (clean(fields, 0) as LogFields) : undefined);
  const wrapping = (logger: Logger): Logger => {
    const write = (level: LogLevel, event: string, fields: LogFields | undefined) => {
      if (logger.enabled(level)) logger[level](event, fieldsOf(fields));
    };
    return {
      debug: (event, fields) => write('debug', event, fields),
      info: (event, fields) => write('info', event, fields),
      warn: (event, fields) => write('warn', event, fields),
      error: (event, fields) => write('error', event, fields),
      child: (fields) => wrapping(logger.child(fieldsOf(fields) ?? {})),
      enabled: (level) => logger.enabled(level),
    };
  };
  return wrapping(inner);
}
