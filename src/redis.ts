/**
 * Redis connections. BullMQ workers need `maxRetriesPerRequest: null` (blocking commands);
 * request paths use a client that fails fast so a Redis outage turns into a 503, not a hang.
 */
import { Redis } from 'ioredis';

export function createRedis(url: string, purpose: 'commands' | 'blocking' = 'commands'): Redis {
  return new Redis(url, {
    lazyConnect: false,
    enableAutoPipelining: false,
    maxRetriesPerRequest: purpose === 'blocking' ? null : 2,
    connectionName: `wa-assistant:${purpose}`,
  });
}
