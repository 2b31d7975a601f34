/**
 * The service's one error hierarchy. Each subclass says whose fault a failure is and whether
 * a retry can help. Errors that cross the queue lose their prototype, so consumers recognise
 * them by `name` as well as `instanceof` (see `isRetryable`).
 */
export class AppError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The environment or a declared unit (role, channel) is invalid: fix the deployment. */
export class ConfigError extends AppError {}

/** A model call failed; `retryable` says whether the same call may succeed later. */
export class ModelCallError extends AppError {
  constructor(
    message: string,
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * A channel could not deliver a message (e.g. Twilio refused it). `outcomeUnknown`: the request
 * may have reached the provider (a timeout, a dropped connection), so the message may be out.
 */
export class ChannelSendError extends AppError {
  readonly outcomeUnknown: boolean;
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly code?: string | number,
    options?: { cause?: unknown; outcomeUnknown?: boolean },
  ) {
    super(message, options);
    this.outcomeUnknown = options?.outcomeUnknown ?? false;
  }
}

/** A store acknowledged a write it did not keep (seen across a database restart): retry it. */
export class StorageWriteError extends AppError {}

/** A field of a thrown value of unknown shape (a library's error, or one that crossed the queue). */
export function errorField(error: unknown, field: string): unknown {
  return typeof error === 'object' && error !== null ? Reflect.get(error, field) : undefined;
}

/** A thrown value's message, whatever was thrown. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** An HTTP status a retry may get past: throttling and server errors (408 too where `timeoutRetryable`). */
export function isRetryableStatus(status: number, options?: { timeoutRetryable?: boolean }): boolean {
  return status === 429 || status >= 500 || (options?.timeoutRetryable === true && status === 408);
}

const retryableNames = new Set(['ModelCallError', 'ChannelSendError']);

/** True when a failure may succeed on retry. Works on errors that lost their prototype. */
export function isRetryable(error: unknown): boolean {
  if (error instanceof ModelCallError || error instanceof ChannelSendError) return error.retryable;
  if (typeof error === 'object' && error !== null && 'name' in error && retryableNames.has(String(error.name))) {
    return (error as { retryable?: unknown }).retryable === true;
  }
  return false;
}

/**
 * Whose fault a failed turn is, which decides how long it is retried:
 * - `infrastructure`: a dependency is down or slow (Twilio 5xx/429, timeouts, the network,
 *   MongoDB or Redis unavailable, a retryable model error) — retried for the message's whole
 *   time budget, never held against the message;
 * - `deterministic`: the same message will fail the same way (Twilio refused it with a 4xx,
 *   input the turn can't process) — given up on at once;
 * - `unknown`: anything else (most likely a bug) — retried a few times, then given up on.
 */
export type FailureKind = 'infrastructure' | 'deterministic' | 'unknown';

const networkCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT']);
const infrastructureNames =
  /^(StorageWriteError|Mongo(Network|NetworkTimeout|ServerSelection|NotConnected|TopologyClosed|PoolCleared|WriteConcern|ServerClosed)Error|MongooseServerSelectionError|MaxRetriesPerRequestError|TimeoutError|AbortError)$/;
const infrastructureMessages = /buffering timed out|connection is closed|connection (\d+ )?to .* closed|stream isn't writeable|server selection timed out|ECONNREFUSED|ECONNRESET/i;
const deterministicNames = new Set(['ZodError', 'ConfigError']);

function fieldsOf(error: object): { name: string; code: unknown; message: string; labels: unknown } {
  const fields = error as { name?: unknown; code?: unknown; message?: unknown; errorLabels?: unknown; errorLabelSet?: unknown };
  return {
    name: typeof fields.name === 'string' ? fields.name : '',
    code: fields.code,
    message: typeof fields.message === 'string' ? fields.message : '',
    labels: fields.errorLabelSet instanceof Set ? [...(fields.errorLabelSet as Set<unknown>)] : fields.errorLabels,
  };
}

/** Classifies a failure (and its `cause` chain) for the retry policy; works on errors that lost their prototype. */
export function classifyFailure(error: unknown): FailureKind {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth += 1) {
    const { name, code, message, labels } = fieldsOf(current);
    if (retryableNames.has(name)) return isRetryable(current) ? 'infrastructure' : 'deterministic';
    if (deterministicNames.has(name)) return 'deterministic';
    if (infrastructureNames.test(name) || infrastructureMessages.test(message)) return 'infrastructure';
    if (typeof code === 'string' && networkCodes.has(code)) return 'infrastructure';
    if (Array.isArray(labels) && labels.some((label) => label === 'RetryableWriteError' || label === 'ResetPool' || label === 'TransientTransactionError')) {
      return 'infrastructure';
    }
    current = (current as { cause?: unknown }).cause;
  }
  return 'unknown';
}
