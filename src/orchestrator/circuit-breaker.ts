/**
 * A per-process circuit breaker for the judge call. After `threshold` consecutive failures it
 * opens: calls are skipped (the caller goes straight to its fallback) until `cooldownMs` has
 * passed; then one trial call is let through (half-open) — success closes it, failure reopens.
 */
export type BreakerState = 'closed' | 'open' | 'half-open';

export interface CircuitBreaker {
  /** True when a call may be attempted now (a half-open trial counts as attempted). */
  allow(): boolean;
  succeeded(): void;
  failed(): void;
  state(): BreakerState;
}

export function createCircuitBreaker(options: { threshold: number; cooldownMs: number; now?: () => number }): CircuitBreaker {
  const now = options.now ?? Date.now;
  let failures = 0;
  let openedAt: number | undefined;
  let trialInFlight = false;

  const state = (): BreakerState => {
    if (openedAt === undefined) return 'closed';
    return now() - openedAt >= options.cooldownMs ? 'half-open' : 'open';
  };

  return {
    state,
    allow() {
      const current = state();
      if (current === 'closed') return true;
      if (current === 'open' || trialInFlight) return false;
      trialInFlight = true;
      return true;
    },
    succeeded() {
      failures = 0;
      openedAt = undefined;
      trialInFlight = false;
    },
    failed() {
      failures += 1;
      trialInFlight = false;
      if (openedAt !== undefined || failures >= options.threshold) openedAt = now();
    },
  };
}
