/**
 * Workers that died in a turn on the inbox head's batch, counted in the head's turn state (the
 * inbox's `retry` hash, so they go with it): every death makes the next attempt guarded and a
 * suspect (run in a child, `turn-isolated.ts`, or as the suspect turn, `suspect-turn.ts`), but only
 * a death while the batch ran alone (its child's, or its worker's as the suspect: `solo-turns.ts`) is
 * evidence against it, and enough to quarantine it
 * (`turn-quarantine.ts`). A worker killed while running it beside other turns may have died of any
 * of them.
 */
import { luaScript, type RedisClient } from '../redis.js';
import { redisKeys } from './keys.js';

/** What a running mark ends with when its turn runs alone in its worker (a suspect turn), or what its child's death is counted as. */
export const ALONE_MARK = '|alone';

// KEYS: retry. ARGV: message id, 1 when the dead turn ran alone. Counts the death, clears the
// mark. Returns every death and the deaths alone ({0, 0}: not that head's state).
const deathScript = luaScript(`
if redis.call('HGET', KEYS[1], 'messageId') ~= ARGV[1] then return {0, 0} end
redis.call('HDEL', KEYS[1], 'running')
local alone = tonumber(redis.call('HGET', KEYS[1], 'alone') or '0')
if ARGV[2] == '1' then alone = redis.call('HINCRBY', KEYS[1], 'alone', 1) end
return {redis.call('HINCRBY', KEYS[1], 'crashes', 1), alone}`);

export interface TurnDeaths {
  /** How many workers died in a turn on the batch, and how many of them ran it alone. */
  crashes: number;
  alone: number;
}

/** A worker died in the turn marked `mark` on the head's batch `messageId`: counts it (alone when the mark says so). */
export async function recordTurnDeath(redis: RedisClient, conversationKey: string, messageId: string, mark: string): Promise<TurnDeaths> {
  const alone = mark.endsWith(ALONE_MARK) ? 1 : 0;
  const result = (await deathScript(redis, [redisKeys.retry(conversationKey)], [messageId, alone])) as [number, number];
  return { crashes: Number(result[0]), alone: Number(result[1]) };
}
