/**
 * Fixed-window rate limits in Redis (one INCR+EXPIRE round trip per check), shared by every
 * web process: per visitor and per IP. A refused request learns when to retry.
 */
import { KEY_PREFIX, type RedisClient } from '../../src/redis.js';

export type RateCheck = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export async function checkRate(redis: RedisClient, scope: string, id: string, limitPerMinute: number): Promise<RateCheck> {
  const key = `${KEY_PREFIX}:rate:${scope}:${id}:${Math.floor(Date.now() / 60_000)}`;
  const results = await redis.multi().incr(key).expire(key, 61).exec();
  const count = Number(results?.[0]?.[1] ?? 0);
  if (count <= limitPerMinute) return { allowed: true };
  return { allowed: false, retryAfterSeconds: Math.max(1, 60 - Math.floor((Date.now() % 60_000) / 1000)) };
}
