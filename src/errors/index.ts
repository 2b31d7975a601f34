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

const retryableNames = new Set(['ModelCallError', 'ChannelSendError']);

/** True when a failure may succeed on retry. Works on errors that lost their prototype. */
export function isRetryable(error: unknown): boolean {
  if (error instanceof ModelCallError || error instanceof ChannelSendError) return error.retryable;
  if (typeof error === 'object' && error !== null && 'name' in error && retryableNames.has(String(error.name))) {
    return (error as { retryable?: unknown }).retryable === true;
  }
  return false;
}
