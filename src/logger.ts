/**
 * Structured logging: one JSON object per line on stdout. Events are noun-verb
 * (`turn-start`, `reply-sent`). Tests swap the sink to capture lines instead of printing them.
 * Never log secrets or whole message bodies at info level; what upstream services put in their
 * errors is not ours to trust, so `redactSecrets` replaces every configured secret by value.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(event: string, fields?: LogFields): void;
  info(event: string, fields?: LogFields): void;
  warn(event: string, fields?: LogFields): void;
  error(event: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

export type LogSink = (line: string, level: LogLevel) => void;

const levelRank: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

const stdoutSink: LogSink = (line) => {
  process.stdout.write(`${line}\n`);
};

function serialize(value: unknown): unknown {
  if (value instanceof Error) {
    return { name: value.name, message: value.message, ...(value.cause ? { cause: serialize(value.cause) } : {}) };
  }
  return value;
}

export function createLogger(options: { level?: LogLevel; sink?: LogSink; fields?: LogFields } = {}): Logger {
  const threshold = levelRank[options.level ?? 'info'];
  const sink = options.sink ?? stdoutSink;
  const base = options.fields ?? {};

  const write = (level: LogLevel, event: string, fields?: LogFields): void => {
    if (levelRank[level] < threshold) return;
    const record: Record<string, unknown> = { time: new Date().toISOString(), level, event, ...base };
    for (const [key, value] of Object.entries(fields ?? {})) record[key] = serialize(value);
    sink(JSON.stringify(record), level);
  };

  return {
    debug: (event, fields) => write('debug', event, fields),
    info: (event, fields) => write('info', event, fields),
    warn: (event, fields) => write('warn', event, fields),
    error: (event, fields) => write('error', event, fields),
    child: (fields) => createLogger({ level: options.level ?? 'info', sink, fields: { ...base, ...fields } }),
  };
}

export const REDACTED = '[redacted]';
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
  return {
    debug: (event, fields) => inner.debug(scrub(event), fieldsOf(fields)),
    info: (event, fields) => inner.info(scrub(event), fieldsOf(fields)),
    warn: (event, fields) => inner.warn(scrub(event), fieldsOf(fields)),
    error: (event, fields) => inner.error(scrub(event), fieldsOf(fields)),
    child: (fields) => redactSecrets(inner.child(fieldsOf(fields) ?? {}), values),
  };
}
