/**
 * The suspect turn, for workers that run suspects in themselves (an entry that can't fork a child
 * for them, `suspect-child.ts`): of the batches a worker has already died in, one at a time runs its next
 * attempt, fleet-wide, alone in its worker process (`solo-turns.ts`). A worker that dies takes
 * every turn it was running with it, so all of them count a death; run again side by side, the
 * innocent ones would still be running when the message that kills workers kills the next one.
 * Alone, a death can only be the suspect's (or a fault outside any turn's), never a bystander's,
 * and it quarantines the suspect at once. Other conversations' turns are not held back.
 *
 * One key per turns queue (its own hash tag: one-key commands only, so on a cluster too): the
 * running mark of the turn holding it. A holder whose process is gone (no heartbeat) is replaced
 * at once; the holder renews its lease while its turn runs (and while it waits for its worker's
 * other turns to end), so the TTL only bounds a holder whose process stopped renewing.
 */
import { KEY_PREFIX, luaScript, type RedisClient } from '../redis.js';
import { releaseLease, renewLease } from '../redis-lease.js';

/** How long a claim stands unless renewed or released first. */
const SUSPECT_TURN_TTL_MS = 120_000;

const suspectTurnKey = (queue: string) => `${KEY_PREFIX}:suspect-turn:{suspect:${queue.replace(/[{}]/g, '')}}`;

// KEYS: slot. ARGV: mark, TTL (ms), the dead holder's mark it may replace (or ''). 1 if claimed.
const claimScript = luaScript(`
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] and holder ~= ARGV[3] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`);

export interface SuspectTurn {
  /** Claims the slot for the turn that writes `mark`; false while another live turn holds it. */
  claim(mark: string): Promise<boolean>;
  /** Extends the lease of the turn holding it as `mark`; false when it does not (any more). */
  renew(mark: string): Promise<boolean>;
  release(mark: string): Promise<void>;
}

export function createSuspectTurn(
  redis: RedisClient,
  queue: string,
  isDead: (mark: string) => Promise<boolean>,
  ttlMs: number = SUSPECT_TURN_TTL_MS,
): SuspectTurn {
  const key = suspectTurnKey(queue);
  const ttl = String(ttlMs);
  return {
    async claim(mark) {
      if (Number(await claimScript(redis, [key], [mark, ttl, ''])) === 1) return true;
      const holder = await redis.get(key);
      if (holder === null) return Number(await claimScript(redis, [key], [mark, ttl, ''])) === 1;
      if (!(await isDead(holder))) return false;
      return Number(await claimScript(redis, [key], [mark, ttl, holder])) === 1;
    },
    renew: (mark) => renewLease(redis, key, mark, ttlMs),
    async release(mark) {
      await releaseLease(redis, key, mark);
    },
  };
}
