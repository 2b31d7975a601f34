/**
 * One logical model call over a tier's list: the first entry whose provider's breaker admits it
 * is called with its own deadline (`withDeadline`); a retryable failure or a timeout (or output
 * the SDK could not parse, or the provider refusing our key or model: 401, 403, 404) moves the
 * call to the next entry of the same list; a refusal of the request itself (400, 422) ends it. When every entry failed or was skipped, the call fails as
 * one retryable `ModelsUnavailableError`: the turn fails as an infrastructure failure, and the
 * queue retries its message within its budget (nobody is asked to send it again).
 *
 * Every call settles its provider's breaker: a success, a refusal of the request or output the
 * SDK could not parse (the provider answered, so it is up) report success; a retryable failure
 * reports failure; an abort reports neither but gives up a probe claim the call held (`released`).
 * The process's outage lines (`ModelOutages`) hear the same: a provider's first failure or skip is
 * one warn line, each further attempt a debug line, its first answer again one warn line.
 *
 * `mayFallOver` lets a caller forbid the move once something left for the customer (a streamed
 * chunk): that failure ends the call as retryable instead.
 */
import { JSONParseError, NoObjectGeneratedError, TypeValidationError, type LanguageModelUsage } from 'ai';
import { errorField, errorStatus, errorText, isRetryableStatus, ModelCallError } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { ProviderBreakers } from '../model/provider-breaker.js';
import type { ModelChain, ModelEntry } from '../model/provider.js';
import type { ModelCallPurpose } from '../contracts/index.js';
import { withDeadline } from './deadline.js';
import { metered, type ModelCallObserver } from './metering.js';
import type { ModelOutages } from './model-outages.js';

/** Every entry of a tier's list failed (or its breaker is open): retryable, an infrastructure failure. */
export class ModelsUnavailableError extends ModelCallError {
  constructor(chain: ModelChain, cause: unknown) {
    super(`every ${chain} model failed or is unavailable: ${errorText(cause)}`, true, { cause });
  }
}

export interface FailoverOptions {
  chain: ModelChain;
  entries: readonly ModelEntry[];
  breakers: ProviderBreakers | undefined;
  /** The process's outage lines (absent: each failure is a debug line only). */
  outages?: ModelOutages | undefined;
  /** Each entry's own deadline. */
  timeoutMs: number;
  signal: AbortSignal;
  purpose: ModelCallPurpose;
  observer: ModelCallObserver | undefined;
  logger: Logger;
  metrics: Metrics;
}

export interface Attempt {
  entry: ModelEntry;
  /** Aborts at the entry's deadline or with the turn's signal. */
  signal: AbortSignal;
  /** No entry after this one: the SDK's own retry is the only one left. */
  last: boolean;
}

/** The HTTP status a failed call carries, itself or on the error it wraps (the SDK's RetryError keeps `lastError`). */
function statusOf(error: unknown): number | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current; depth += 1) {
    const status = errorStatus(current, 'statusCode') ?? errorStatus(current, 'status');
    if (status !== undefined) return status;
    current = errorField(current, 'lastError') ?? errorField(current, 'cause');
  }
  return undefined;
}

/** This provider's account refuses us (a key revoked, a model it does not serve): another provider may not. */
const PROVIDER_REFUSALS = new Set([401, 403, 404]);

/**
 * A failure another provider may not share: throttling, a 5xx, no answer, a timeout, unparseable
 * output, or this provider refusing our key or model. A refusal of the request itself (400, 422)
 * would be the same anywhere.
 */
function mayTryNext(error: unknown): boolean {
  const status = statusOf(error);
  // A 2xx that failed is a body the SDK could not parse (malformed output).
  if (status !== undefined && (status < 300 || PROVIDER_REFUSALS.has(status))) return true;
  return isRetryableStatus(status, { timeoutRetryable: true });
}

/**
 * The provider answered, but not with what was asked (output the SDK could not parse or validate):
 * another entry may do better, but this provider is up — its breaker hears a success, so a model
 * that writes bad JSON for the judge never closes the way to the replies.
 */
function answeredUnusable(error: unknown): boolean {
  if (NoObjectGeneratedError.isInstance(error) || JSONParseError.isInstance(error) || TypeValidationError.isInstance(error)) return true;
  const status = statusOf(error);
  return status !== undefined && status < 300;
}

const breakerUnwritten = (logger: Logger, provider: string, error: unknown) => logger.warn('model-breaker-unwritten', { provider, error });

export async function withFailover<T extends { usage: LanguageModelUsage; requests?: number }>(
  options: FailoverOptions,
  run: (attempt: Attempt) => Promise<T>,
  mayFallOver: () => boolean = () => true,
): Promise<T & { entry: ModelEntry }> {
  const { entries, breakers, outages, logger, metrics } = options;
  let lastError: unknown = new Error(`no ${options.chain} model is configured`);
  for (const [index, entry] of entries.entries()) {
    const last = index === entries.length - 1;
    if (breakers && !(await breakers.admit(entry.provider))) {
      metrics.increment('model_entry_skipped_total', { provider: entry.provider });
      outages?.skipped(logger, entry.provider);
      lastError = new Error(`the ${entry.provider} circuit breaker is open`);
      continue;
    }
    try {
      const result = await metered(options.observer, { purpose: options.purpose, tier: options.chain, model: entry.label, signal: options.signal }, () =>
        withDeadline(options.timeoutMs, options.signal, (signal) => run({ entry, signal, last })),
      );
      await breakers?.succeeded(entry.provider).catch((error: unknown) => breakerUnwritten(logger, entry.provider, error));
      outages?.answered(logger, entry.provider);
      return { ...result, entry };
    } catch (error) {
      // Aborted with its turn, or a list inside this attempt (the vision description) ran out:
      // nothing learned of this provider; a probe this call held is given up, not kept.
      if (options.signal.aborted || error instanceof ModelsUnavailableError) {
        await breakers?.released(entry.provider).catch((breakerError: unknown) => breakerUnwritten(logger, entry.provider, breakerError));
        throw error;
      }
      if (!mayTryNext(error)) {
        // The provider answered (an HTTP status refusing this request): it is up, which settles a probe.
        await breakers?.succeeded(entry.provider).catch((breakerError: unknown) => breakerUnwritten(logger, entry.provider, breakerError));
        outages?.answered(logger, entry.provider);
        throw error instanceof ModelCallError ? error : new ModelCallError(`model call failed: ${errorText(error)}`, false, { cause: error });
      }
      lastError = error;
      const unusable = answeredUnusable(error);
      const settle = unusable ? breakers?.succeeded(entry.provider) : breakers?.failed(entry.provider);
      await settle?.catch((breakerError: unknown) => breakerUnwritten(logger, entry.provider, breakerError));
      metrics.increment('model_entry_failed_total', { provider: entry.provider, purpose: options.purpose });
      if (unusable) outages?.answered(logger, entry.provider);
      else outages?.failed(logger, entry.provider, error);
      // An outage's attempts at debug: its first failure is its own warn line (model-outages.ts).
      const fields = { chain: options.chain, purpose: options.purpose, model: entry.label, next: !last, error };
      if (unusable) logger.warn('model-entry-failed', fields);
      else logger.debug('model-entry-failed', fields);
      if (!mayFallOver()) throw new ModelCallError(`model call failed after output began: ${errorText(error)}`, true, { cause: error });
    }
  }
  throw new ModelsUnavailableError(options.chain, lastError);
}
