/**
 * Structured logging: one JSON object per line on stdout. Events are noun-verb
 * (`turn-start`, `reply-sent`). Tests swap the sink to capture lines instead of printing them.
 * Never log secrets or whole message bodies at info level.
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
