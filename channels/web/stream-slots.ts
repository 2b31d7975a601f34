/**
 * At most a few open event streams per visitor, across every web process: each open stream
 * holds a slot in a Redis sorted set scored by its last heartbeat, so a stream whose process
 * died stops counting after a few missed heartbeats instead of holding its slot for ever.
 */
import { randomUUID } from 'node:crypto';
import { KEY_PREFIX, luaScript, type RedisClient } from '../../src/redis.js';

// KEYS: slots. ARGV: now (ms), stale before (ms), member, cap, ttl (s). Returns 1 when a slot was taken.
// Sent once (EVALSHA after), not with every stream's open.
const takeScript = luaScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1`);
// KEYS: slots. ARGV: now (ms), member, ttl (s). A script, not a MULTI: no ioredis pipeline object per heartbeat.
const refreshScript = luaScript(`
redis.call('ZADD', KEYS[1], 'XX', ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1`);

export interface StreamSlot {
  /** Marks the stream alive; call it on every heartbeat. */
  refresh(): Promise<void>;
  release(): Promise<void>;
}

// One small object per open stream, its methods on the prototype: no closures per stream.
class Slot implements StreamSlot {
  constructor(
    private readonly redis: RedisClient,
    private readonly key: string,
    private readonly member: string,
    private readonly ttlSeconds: number,
  ) {}

  async refresh(): Promise<void> {
    await refreshScript(this.redis, [this.key], [Date.now(), this.member, this.ttlSeconds]);
  }

  async release(): Promise<void> {
    await this.redis.zrem(this.key, this.member);
  }
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
      const taken = await takeScript(redis, [key], [now, now - staleAfterMs, member, options.perVisitor, ttlSeconds]);
      return taken === 1 ? new Slot(redis, key, member, ttlSeconds) : undefined;
    },
  };
}
