/**
 * The send ledger, recent history and transcript outbox live in Redis, so Redis must persist
 * them: the service expects `appendonly yes` with `appendfsync everysec` (README). At start-up
 * this asks Redis and logs a clear warning when AOF is off; a Redis that refuses CONFIG (a
 * managed service renaming it) is tolerated with a note, never a failed start.
 */
import { Cluster } from 'ioredis';
import type { RedisClient } from '../redis.js';
import type { Logger } from '../logger.js';

/** Checks every primary of a cluster (each persists its own slots), or the one server. */
export async function checkRedisPersistence(redis: RedisClient, logger: Logger): Promise<'aof' | 'off' | 'unknown'> {
  const servers = redis instanceof Cluster ? redis.nodes('master') : [redis];
  let value: unknown = 'yes';
  for (const server of servers) {
    let reply: unknown;
    try {
      reply = await server.config('GET', 'appendonly');
    } catch (error) {
      logger.info('redis-persistence-unchecked', { reason: 'CONFIG GET refused', error });
      return 'unknown';
    }
    const found = Array.isArray(reply) ? reply[1] : undefined;
    if (found !== 'yes') value = found;
  }
  if (value === 'yes') return 'aof';
  logger.warn('redis-aof-off', {
    appendonly: typeof value === 'string' ? value : 'unknown',
    consequence: 'a Redis restart loses the send ledger and transcript records not yet written to MongoDB: set appendonly yes, appendfsync everysec',
  });
  return 'off';
}
