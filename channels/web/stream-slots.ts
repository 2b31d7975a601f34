/**
 * At most a few open event streams per visitor, across every web process: each open stream
 * holds a slot in a Redis sorted set scored by its last heartbeat, so a stream whose process
 * died stops counting after a few missed heartbeats instead of holding its slot for ever.
 */
import { randomUUID } from 'node:crypto';
import { KEY_PREFIX, type RedisClient } from '../../src/redis.js';

// KEYS: slots. ARGV: now (ms), stale before (ms), member, cap, ttl (s). Returns 1 when a slot was taken.
const takeScript = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1`;

export interface StreamSlot {
  /** Marks the stream alive; call it on every heartbeat. */
  refresh(): Promise<void>;
  release(): Promise<void>;
}

export function createStreamSlots(redis: RedisClient, options: { perVisitor: number; heartbeatMs: number }) {
  const staleAfterMs = options.heartbeatMs * 3;
  const ttlSeconds = Math.ceil(staleAfterMs / 1000) + 1;
  return {
    /** A slot for one more stream of this visitor, or undefined when they hold the maximum. */
    async take(visitorKey: string): Promise<StreamSlot | undefined> {
      const key = `${KEY_PREFIX}:streams:{${visitorKey}}`;
      const member = randomUUID();
      const now = Date.now();
      const taken = await redis.eval(takeScript, 1, key, now, now - staleAfterMs, member, options.perVisitor, ttlSeconds);
      if (taken !== 1) return undefined;
      return {
        async refresh() {
          await redis.multi().zadd(key, 'XX', Date.now(), member).expire(key, ttlSeconds).exec();
        },
        async release() {
          await redis.zrem(key, member);
        },
      };
    },
  };
}
