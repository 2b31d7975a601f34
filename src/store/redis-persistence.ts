/**
 * The send ledger, recent history and transcript outbox live in Redis, so Redis must persist
 * them: the service expects `appendonly yes` with `appendfsync everysec` (README). At start-up
 * this asks Redis and logs a clear warning when AOF is off; a Redis that refuses CONFIG (a
 * managed service renaming it) is tolerated with a note, never a failed start.
 */
import type { Redis } from 'ioredis';
import type { Logger } from '../logger.js';

export async function checkRedisPersistence(redis: Redis, logger: Logger): Promise<'aof' | 'off' | 'unknown'> {
  let reply: unknown;
  try {
    reply = await redis.config('GET', 'appendonly');
  } catch (error) {
    logger.info('redis-persistence-unchecked', { reason: 'CONFIG GET refused', error });
    return 'unknown';
  }
  const value = Array.isArray(reply) ? reply[1] : undefined;
  if (value === 'yes') return 'aof';
  logger.warn('redis-aof-off', {
    appendonly: typeof value === 'string' ? value : 'unknown',
    consequence: 'a Redis restart loses the send ledger and transcript records not yet written to MongoDB: set appendonly yes, appendfsync everysec',
  });
  return 'off';
}
