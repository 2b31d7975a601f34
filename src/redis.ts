/**
 * Redis connections: one server (`REDIS_URL`) or a Redis Cluster (`REDIS_CLUSTER_NODES`), the
 * same code on both. BullMQ workers need `maxRetriesPerRequest: null` (blocking commands);
 * request paths use a client that fails fast so a Redis outage turns into a 503, not a hang.
 */
import { createHash } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import type { Config } from './config.js';

/** A standalone client or a cluster client: both run every command the service sends. */
export type RedisClient = Redis | Cluster;

/**
 * Every key the service writes starts with this. Each layer owns its keys (queue/keys.ts,
 * orchestrator/state/keys.ts, the web channel's); keys of one conversation share a
 * `{conversationKey}` hash tag so they live on one cluster slot, and every Lua script, MULTI
 * or pipeline touches keys of one tag only (a cluster refuses anything else with CROSSSLOT).
 */
export const KEY_PREFIX = 'asst';

/**
 * BullMQ's key prefix. Its scripts touch many keys of a queue at once, so on a cluster the
 * prefix must be a hash tag (BullMQ's "Redis Cluster" guide): every queue lives on one slot.
 */
export const QUEUE_PREFIX = '{asst-bull}';

export function createRedis(config: Pick<Config, 'redisUrl' | 'redisClusterNodes'>, purpose: 'commands' | 'blocking' = 'commands'): RedisClient {
  const options = {
    maxRetriesPerRequest: purpose === 'blocking' ? null : 2,
    connectionName: `wa-assistant:${purpose}`,
  };
  if (config.redisClusterNodes === undefined) {
    return new Redis(config.redisUrl, { ...options, lazyConnect: false, enableAutoPipelining: false });
  }
  // The nodes come from REDIS_CLUSTER_NODES; REDIS_URL still gives the credentials and TLS (rediss://).
  const url = new URL(config.redisUrl);
  return new Cluster(config.redisClusterNodes, {
    lazyConnect: false,
    enableAutoPipelining: false,
    redisOptions: {
      ...options,
      ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
      ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
      ...(url.protocol === 'rediss:' ? { tls: {} } : {}),
    },
  });
}

/** Another connection like `client` (e.g. for a subscriber, which can send nothing else). */
export function duplicateRedis(client: RedisClient): RedisClient {
  return client instanceof Cluster ? client.duplicate() : client.duplicate();
}

/**
 * A Lua script sent to Redis once: each run is an EVALSHA of its digest, and only a server
 * that does not know it yet (NOSCRIPT: first use, a restart, another cluster node) gets its text.
 */
export function luaScript(lua: string) {
  const sha = createHash('sha1').update(lua).digest('hex');
  return async (redis: RedisClient, keys: readonly string[], args: readonly (string | number)[] = []): Promise<unknown> => {
    try {
      return await redis.evalsha(sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return redis.eval(lua, keys.length, ...keys, ...args);
    }
  };
}
