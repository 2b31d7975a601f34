/**
 * A model provider's outages in the log, as one process sees them: the first call that fails
 * retryably (or is skipped because the provider's circuit breaker is open) is one warn line,
 * `model-outage`, naming the provider and the cause; each failed or skipped call during it is a
 * debug line; once the provider answers again (two calls in a row: a turn's judgment alone is not a
 * recovery while its reply still fails) one warn line, `model-recovered`, says how long it lasted
 * and how many calls failed meanwhile. A call that failed because every entry
 * of its list was out (`ModelsUnavailableError`) is a debug line wherever it is logged: each
 * provider's outage line already said why. `active()`: whether a provider this process saw go out
 * failed within the last minute (a fallback nobody calls again stays out, but not active).
 */
import { errorText } from '../errors/index.js';
import type { Logger } from '../logger.js';

export interface ModelOutages {
  /** A call to `provider` failed retryably. */
  failed(logger: Logger, provider: string, error: unknown): void;
  /** A call skipped `provider`: its circuit breaker is open. */
  skipped(logger: Logger, provider: string): void;
  /** `provider` answered. */
  answered(logger: Logger, provider: string): void;
  /** Whether this process saw a provider fail (or skipped it) within the last minute, its outage not over. */
  active(): boolean;
}

/** The deepest message of a failure (the SDK's retry error keeps its last one in `lastError`): the cause in words. */
function causeOf(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 6 && current instanceof Error; depth += 1) {
    const next: unknown = (current as { lastError?: unknown }).lastError ?? current.cause;
    if (!(next instanceof Error)) break;
    current = next;
  }
  return errorText(current);
}

/** Answers in a row that end an outage. */
const RECOVERED_AFTER = 2;
/** How long after its last failure an outage still counts as active. */
const ACTIVE_MS = 60_000;

export function createModelOutages(now: () => number = Date.now): ModelOutages {
  const out = new Map<string, { since: number; lastFailedAt: number; failedCalls: number; answeredInARow: number }>();
  const begin = (logger: Logger, provider: string, cause: string) => {
    out.set(provider, { since: now(), lastFailedAt: now(), failedCalls: 1, answeredInARow: 0 });
    logger.warn('model-outage', { provider, cause });
  };
  return {
    failed(logger, provider, error) {
      const outage = out.get(provider);
      if (!outage) return begin(logger, provider, causeOf(error));
      outage.failedCalls += 1;
      outage.answeredInARow = 0;
      outage.lastFailedAt = now();
    },
    skipped(logger, provider) {
      const outage = out.get(provider);
      if (!outage) return begin(logger, provider, 'its circuit breaker is open (opened by another process)');
      outage.failedCalls += 1;
      outage.answeredInARow = 0;
      outage.lastFailedAt = now();
      logger.debug('model-entry-skipped', { provider });
    },
    answered(logger, provider) {
      const outage = out.get(provider);
      if (!outage) return;
      outage.answeredInARow += 1;
      if (outage.answeredInARow < RECOVERED_AFTER) return;
      out.delete(provider);
      logger.warn('model-recovered', { provider, outageMs: now() - outage.since, failedCalls: outage.failedCalls });
    },
    active: () => [...out.values()].some((outage) => now() - outage.lastFailedAt < ACTIVE_MS),
  };
}
