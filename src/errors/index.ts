/**
 * The service's one error hierarchy. Each subclass says whose fault a failure is and whether
 * a retry can help; every error class the service throws extends `AppError` (some live beside
 * the code that throws them). No error crosses a queue (a failed turn is classified in the
 * process that ran it; the retry state keeps counts, not errors), so ours are recognised by
 * `instanceof`; a library's errors, by name and fields (`classifyFailure`). Also here: the one
 * helper each for reading fields off an unknown thrown value, for HTTP statuses worth retrying
 * and (in `issues.ts`) for reporting zod issues.
 */
export class AppError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The environment or a declared unit (role, channel) is invalid: fix the deployment. */
export class ConfigError extends AppError {}

/** A call to a dependency failed; `retryable` says whether the same call may succeed later. */
export class DependencyError extends AppError {
  constructor(
    message: string,
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A model call failed. */
export class ModelCallError extends DependencyError {}

/**
 * A channel could not deliver a message (e.g. Twilio refused it). `outcomeUnknown`: the request
 * may have reached the provider (a timeout, a dropped connection), so the message may be out.
 */
export class ChannelSendError extends DependencyError {
  readonly outcomeUnknown: boolean;
  constructor(
    message: string,
    retryable: boolean,
    readonly code?: string | number,
    options?: { cause?: unknown; outcomeUnknown?: boolean },
  ) {
    super(message, retryable, options);
    this.outcomeUnknown = options?.outcomeUnknown ?? false;
  }
}

/** A failure classified in the process where it happened (a suspect turn's child): `kind` is what that process found. */
export class ClassifiedFailure extends AppError {
  constructor(
    message: string,
    readonly kind: FailureKind,
  ) {
    super(message);
  }
}

/** A store acknowledged a write it did not keep (seen across a database restart): retry it. */
export class StorageWriteError extends AppError {}

/** A field of a thrown value of unknown shape (a library's error, or one that crossed the queue). */
export function errorField(error: unknown, field: string): unknown {
  return typeof error === 'object' && error !== null ? Reflect.get(error, field) : undefined;
}

/** MongoDB's duplicate-key error (code 11000), alone or as every write error of a bulk insert. */
export function isDuplicateKeyError(error: unknown): boolean {
  if (errorField(error, 'code') === 11000) return true;
  const writeErrors = errorField(error, 'writeErrors');
  return (
    Array.isArray(writeErrors) &&
    writeErrors.length > 0 &&
    writeErrors.every((entry: unknown) => (errorField(entry, 'code') ?? errorField(errorField(entry, 'err'), 'code')) === 11000)
  );
}

/** A thrown value's message, whatever was thrown. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A numeric field of a thrown value (an HTTP status: `status`, `statusCode`), if it has one. */
export function errorStatus(error: unknown, field: 'status' | 'statusCode' = 'status'): number | undefined {
  const status = errorField(error, field);
  return typeof status === 'number' ? status : undefined;
}

/**
 * Whether a request that got this HTTP status (undefined: no answer at all — a timeout, a
 * dropped connection) may succeed if made again: throttling, server errors, no answer, and a
 * 408 where `timeoutRetryable`. Any other 4xx will fail the same way.
 */
export function isRetryableStatus(status: number | undefined, options?: { timeoutRetryable?: boolean }): boolean {
  return status === undefined || status === 429 || status >= 500 || (options?.timeoutRetryable === true && status === 408);
}

/** True when a failure may succeed on retry (a model or channel error that says so). */
export function isRetryable(error: unknown): boolean {
  return (error instanceof ModelCallError || error instanceof ChannelSendError) && error.retryable;
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

const networkCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);
const infrastructureNames =
  /^(StorageWriteError|ActionOutcomePendingError|Mongo(Network|NetworkTimeout|ServerSelection|NotConnected|TopologyClosed|PoolCleared|WriteConcern|ServerClosed)Error|MongooseServerSelectionError|MaxRetriesPerRequestError|TimeoutError|AbortError)$/;
const infrastructureMessages =
  /buffering timed out|connection is closed|connection (\d+ )?to .* closed|stream isn't writeable|server selection timed out|ECONNREFUSED|ECONNRESET/i;
const deterministicNames = new Set(['ZodError', 'ConfigError']);

function fieldsOf(error: object): { name: string; code: unknown; message: string; labels: unknown } {
  const name = errorField(error, 'name');
  const message = errorField(error, 'message');
  const labelSet = errorField(error, 'errorLabelSet');
  return {
    name: typeof name === 'string' ? name : '',
    code: errorField(error, 'code'),
    message: typeof message === 'string' ? message : '',
    labels: labelSet instanceof Set ? [...labelSet] : errorField(error, 'errorLabels'),
  };
}

/** Classifies a failure (and its `cause` chain) for the retry policy. */
export function classifyFailure(error: unknown): FailureKind {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth += 1) {
    const { name, code, message, labels } = fieldsOf(current);
    if (current instanceof ClassifiedFailure) return current.kind;
    if (current instanceof ModelCallError || current instanceof ChannelSendError) return current.retryable ? 'infrastructure' : 'deterministic';
    if (deterministicNames.has(name)) return 'deterministic';
    if (infrastructureNames.test(name) || infrastructureMessages.test(message)) return 'infrastructure';
    if (typeof code === 'string' && networkCodes.has(code)) return 'infrastructure';
    if (Array.isArray(labels) && labels.some((label) => label === 'RetryableWriteError' || label === 'ResetPool' || label === 'TransientTransactionError')) {
      return 'infrastructure';
    }
    current = errorField(current, 'cause');
  }
  return 'unknown';
}
