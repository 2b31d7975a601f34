/**
 * The send ledger, recent history and transcript outbox live in Redis, so Redis must persist
 * them: the service expects `appendonly yes` with `appendfsync everysec` (docs/deployment.md). At start-up
 * this asks Redis and logs a clear warning when AOF is off; a Redis that refuses CONFIG (a
 * managed service renaming it) is tolerated with a note, never a failed start.
 *
 * For the same reason Redis must never evict them: the service expects `maxmemory-policy
 * noeviction` (a full Redis then refuses writes, which the outbox bound keeps away). Any other
 * policy drops inboxes, ledger entries or outbox records silently once `maxmemory` is reached,
 * so start-up warns about it the same way.
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

/** Checks every primary's `maxmemory-policy` (each evicts its own slots): `noeviction`, the first other policy found, or `unknown` (CONFIG refused). */
export async function checkRedisEviction(redis: RedisClient, logger: Logger): Promise<string> {
  const servers = redis instanceof Cluster ? redis.nodes('master') : [redis];
  for (const server of servers) {
    let reply: unknown;
    try {
      reply = await server.config('GET', 'maxmemory*');
    } catch (error) {
      logger.info('redis-persistence-unchecked', { reason: 'CONFIG GET refused', setting: 'maxmemory-policy', error });
      return 'unknown';
    }
    const fields = new Map<unknown, unknown>();
    if (Array.isArray(reply)) for (let index = 0; index + 1 < reply.length; index += 2) fields.set(reply[index], reply[index + 1]);
    const policy = fields.get('maxmemory-policy');
    if (typeof policy === 'string' && policy !== 'noeviction') {
      logger.warn('redis-eviction-on', {
        maxmemoryPolicy: policy,
        maxmemory: typeof fields.get('maxmemory') === 'string' ? fields.get('maxmemory') : 'unknown',
        consequence:
          'once maxmemory is reached Redis silently evicts inboxes, send-ledger entries and transcript records not yet written to MongoDB: set maxmemory-policy noeviction',
      });
      return policy;
    }
  }
  return 'noeviction';
}
