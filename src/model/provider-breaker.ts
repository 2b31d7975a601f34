/**
 * A circuit breaker per model provider, shared by every worker through Redis: after `failures`
 * failed calls in a row (counted across workers; a process that saw the provider succeed since
 * its last failure report starts the count again) the provider is skipped for `cooldownMs`; then
 * one call (one worker's, by a Redis claim) probes it — success closes it for everyone, failure
 * opens it again. A probe always settles: one that ends without saying whether the provider is
 * up (aborted with its turn) gives its claim up (`released`), so the next call probes at once
 * instead of the provider staying skipped for another cooldown.
 *
 * Cheap on a healthy path: each process keeps what it last learned per provider, and a provider
 * it knows nothing bad about is admitted from memory, with no Redis command. Redis is read and
 * written only after a failure (the failure script answers with the shared state, so a process
 * learns then that others opened it), by a process that saw failures once a call succeeds (to
 * clear them), and to claim a probe. A process that has not failed yet still sends its first
 * call to an open provider; it learns from that call's failure.
 *
 * Keys: `asst:{model-breaker:<provider>}` (a hash: failures, openUntil) and its `:probe` claim,
 * one hash tag per provider (cluster ready).
 */
import { KEY_PREFIX, luaScript, type RedisClient } from '../redis.js';

export interface ProviderBreakers {
  /** Whether a call may go to this provider now (a granted probe counts as admitted). */
  admit(provider: string): boolean | Promise<boolean>;
  /** The call succeeded: clears the provider's failures when this process knew of any. */
  succeeded(provider: string): Promise<void>;
  /** The call failed (retryably): counts it, and learns whether the provider is now open. */
  failed(provider: string): Promise<void>;
  /**
   * The call ended saying nothing of the provider (aborted, or failed for a reason not its own):
   * gives up this process's probe claim, if it held one, so the next call may probe at once.
   */
  released(provider: string): Promise<void>;
}

// Counts a failure — or starts the count again at 1 when the reporting process saw a success
// since its last report (ARGV[5] = '1'): failures in a row, not failures scattered between the
// fleet's successes. Opens the breaker at ARGV[1] failures, or at once after a failed probe
// (ARGV[4] = '1'). Returns when it is open until (0: closed). The count lives four cooldowns past
// the last failure.
const failScript = luaScript(`
local failures = 1
if ARGV[5] == '1' then
  redis.call('HSET', KEYS[1], 'failures', 1)
else
  failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
end
local openUntil = tonumber(redis.call('HGET', KEYS[1], 'openUntil') or '0')
local now = tonumber(ARGV[2])
if failures >= tonumber(ARGV[1]) or ARGV[4] == '1' then
  if openUntil <= now then
    openUntil = now + tonumber(ARGV[3])
    redis.call('HSET', KEYS[1], 'openUntil', openUntil)
  end
  redis.call('DEL', KEYS[2])
end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) * 4)
return openUntil
`);

// Once an open breaker's cooldown is over: claims the one probe. Returns -1 (probe granted), 0
// (closed meanwhile: admit), or until when to skip it (still open, or another worker probing).
const probeScript = luaScript(`
local openUntil = tonumber(redis.call('HGET', KEYS[1], 'openUntil') or '0')
local now = tonumber(ARGV[1])
if openUntil == 0 then return 0 end
if openUntil > now then return openUntil end
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[2]) then return -1 end
return now + tonumber(ARGV[3])
`);

interface Known {
  /** When the breaker stays open until (0: closed, as far as this process knows). */
  openUntil: number;
  /** This process saw a failure not cleared by a success since (so a success writes). */
  dirty: boolean;
  /** This process holds the provider's probe. */
  probing: boolean;
}

export function createProviderBreakers(options: {
  redis: RedisClient;
  failures: number;
  cooldownMs: number;
  /** Namespaces the keys (tests sharing one Redis); production has none. */
  scope?: string;
  now?: () => number;
}): ProviderBreakers {
  const { redis, failures, cooldownMs } = options;
  const breakerKey = (provider: string) => `${KEY_PREFIX}:{model-breaker:${options.scope ? `${options.scope}:` : ''}${provider}}`;
  const probeKey = (provider: string) => `${breakerKey(provider)}:probe`;
  const now = options.now ?? Date.now;
  const known = new Map<string, Known>();
  /** Providers this process saw succeed since it last reported a failure of theirs (kept in memory: a success writes nothing). */
  const succeededSinceReport = new Set<string>();
  /** While another worker probes: how soon to ask again. */
  const recheckMs = Math.max(250, Math.min(2_000, Math.floor(cooldownMs / 4)));

  return {
    admit(provider) {
      const state = known.get(provider);
      if (!state || state.openUntil === 0) return true;
      if (state.openUntil > now()) return false;
      return (async () => {
        const answer = Number(await probeScript(redis, [breakerKey(provider), probeKey(provider)], [now(), cooldownMs, recheckMs]));
        if (answer === -1) {
          state.probing = true;
          return true;
        }
        state.openUntil = answer;
        return answer === 0;
      })();
    },

    async succeeded(provider) {
      succeededSinceReport.add(provider);
      const state = known.get(provider);
      if (!state?.dirty && !state?.probing) return;
      known.delete(provider);
      await redis.del(breakerKey(provider), probeKey(provider));
    },

    async released(provider) {
      const state = known.get(provider);
      if (!state?.probing) return;
      // Its cooldown is still over: the next admit claims the probe again.
      state.probing = false;
      await redis.del(probeKey(provider));
    },

    async failed(provider) {
      const state = known.get(provider) ?? { openUntil: 0, dirty: false, probing: false };
      known.set(provider, state);
      const probe = state.probing;
      state.dirty = true;
      state.probing = false;
      const sawSuccess = succeededSinceReport.delete(provider);
      state.openUntil = Number(
        await failScript(redis, [breakerKey(provider), probeKey(provider)], [failures, now(), cooldownMs, probe ? '1' : '0', sawSuccess ? '1' : '0']),
      );
    },
  };
}
