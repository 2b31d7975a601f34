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

/** The caller sent something we refuse; maps to a 4xx and is never retried. */
export class InvalidRequestError extends AppError {
  constructor(
    message: string,
    readonly status: 400 | 401 | 403 | 404 | 409 | 413 | 415 | 429 = 400,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

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

/** A channel could not deliver a message (e.g. Twilio refused it). */
export class ChannelSendError extends AppError {
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly code?: string | number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A continuation leg whose stored decision has expired: refused, never re-judged. */
export class DecisionExpiredError extends AppError {}

const retryableNames = new Set(['ModelCallError', 'ChannelSendError']);

/** True when a failure may succeed on retry. Works on errors that lost their prototype. */
export function isRetryable(error: unknown): boolean {
  if (error instanceof ModelCallError || error instanceof ChannelSendError) return error.retryable;
  if (typeof error === 'object' && error !== null && 'name' in error && retryableNames.has(String(error.name))) {
    return (error as { retryable?: unknown }).retryable === true;
  }
  return false;
}
