/**
 * Fixed-window rate limits in Redis (one script round trip per check: INCR, then EXPIRE),
 * shared by every web process: per visitor and per IP. A refused request learns when to retry.
 * A script, not a MULTI: each ioredis MULTI builds a pipeline object with its own copy of the
 * client's commands, and an event stream's open checks two limits (see docs/benchmarks.md).
 */
import { KEY_PREFIX, luaScript, type RedisClient } from '../../src/redis.js';

// KEYS: the window's counter. ARGV: its TTL (s). Returns the count in this window.
const countScript = luaScript(`
local count = redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[1])
return count`);

export type RateCheck = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export async function checkRate(redis: RedisClient, scope: string, id: string, limitPerMinute: number): Promise<RateCheck> {
  const key = `${KEY_PREFIX}:rate:${scope}:${id}:${Math.floor(Date.now() / 60_000)}`;
  const count = Number(await countScript(redis, [key], [61]));
  if (count <= limitPerMinute) return { allowed: true };
  return { allowed: false, retryAfterSeconds: Math.max(1, 60 - Math.floor((Date.now() % 60_000) / 1000)) };
}
