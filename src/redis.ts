/**
 * Redis connections. BullMQ workers need `maxRetriesPerRequest: null` (blocking commands);
 * request paths use a client that fails fast so a Redis outage turns into a 503, not a hang.
 */
import { Redis } from 'ioredis';

/**
 * Every key the service writes starts with this. Each layer owns its keys (queue/keys.ts,
 * orchestrator/state/keys.ts, the web channel's); keys of one conversation share a
 * `{conversationKey}` hash tag so they live on one cluster slot.
 */
export const KEY_PREFIX = 'asst';

export function createRedis(url: string, purpose: 'commands' | 'blocking' = 'commands'): Redis {
  return new Redis(url, {
    lazyConnect: false,
    enableAutoPipelining: false,
    maxRetriesPerRequest: purpose === 'blocking' ? null : 2,
    connectionName: `wa-assistant:${purpose}`,
  });
}
