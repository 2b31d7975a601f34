/**
 * What `npm run chat` says when it can't do its job, in one line each: the stores it needs are
 * not running (asked once, before anything connects, so no client retries into a wall of
 * connection errors), or a turn got no answer (its root cause, and what to do about it).
 */
import { Cluster, Redis } from 'ioredis';
import mongoose from 'mongoose';
import type { Config } from './config.js';
import { errorField, errorText, ModelCallError } from './errors/index.js';
import { checkProviders } from './model/provider-check.js';

const STORE_CHECK_MS = 3000;

/** A URL without its credentials, for a line a user reads. */
function shown(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString();
  } catch {
    return url;
  }
}

/** One PING, no retries: whether the Redis the configuration names answers. */
async function redisAnswers(config: Pick<Config, 'redisUrl' | 'redisClusterNodes'>): Promise<boolean> {
  const once = { lazyConnect: true, connectTimeout: STORE_CHECK_MS, maxRetriesPerRequest: 0, enableOfflineQueue: false } as const;
  const client =
    config.redisClusterNodes === undefined
      ? new Redis(config.redisUrl, { ...once, retryStrategy: () => null })
      : new Cluster(config.redisClusterNodes, {
          lazyConnect: true,
          enableOfflineQueue: false,
          clusterRetryStrategy: () => null,
          redisOptions: redisOptionsOf(config.redisUrl),
        });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.ping();
    return true;
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** REDIS_URL's credentials and TLS, for a cluster's nodes. */
function redisOptionsOf(redisUrl: string) {
  const url = new URL(redisUrl);
  return {
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    ...(url.protocol === 'rediss:' ? { tls: {} } : {}),
  };
}

async function mongoAnswers(uri: string): Promise<boolean> {
  const connection = mongoose.createConnection(uri, { serverSelectionTimeoutMS: STORE_CHECK_MS });
  try {
    await connection.asPromise();
    return true;
  } catch {
    return false;
  } finally {
    await connection.close().catch(() => undefined);
  }
}

/** The line to print when Redis or MongoDB does not answer (undefined: both do). */
export async function storesDown(config: Pick<Config, 'redisUrl' | 'redisClusterNodes' | 'mongodbUri'>): Promise<string | undefined> {
  const [redis, mongo] = await Promise.all([redisAnswers(config), mongoAnswers(config.mongodbUri)]);
  const down = [
    ...(redis ? [] : [config.redisClusterNodes ? 'the Redis Cluster of REDIS_CLUSTER_NODES' : `Redis at ${shown(config.redisUrl)} (REDIS_URL)`]),
    ...(mongo ? [] : [`MongoDB at ${shown(config.mongodbUri)} (MONGODB_URI)`]),
  ];
  if (down.length === 0) return undefined;
  return `chat: ${down.join(' and ')} ${down.length > 1 ? 'do' : 'does'} not answer. npm run chat uses the service's Redis and MongoDB: start the service first (bash scripts/start.sh, in another terminal), or point REDIS_URL / MONGODB_URI in .env at yours`;
}

/** The deepest message of a failure's chain (the SDK's retry error keeps its last one in `lastError`). */
function rootCause(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 8; depth += 1) {
    const next = errorField(current, 'lastError') ?? errorField(current, 'cause');
    if (!(next instanceof Error)) break;
    current = next;
  }
  return errorText(current);
}

/**
 * The line to print for a turn that got no answer. A model failure names what the provider check
 * finds now (an open circuit breaker hides the cause: the check asks the provider again), or the
 * failure's own root cause when the provider answers that check.
 */
export async function noAnswerLine(error: unknown, model: Config['model']): Promise<string> {
  if (!(error instanceof ModelCallError)) return `chat: no answer: ${rootCause(error)} (the turn failed; send your message again)`;
  const results = await checkProviders(model);
  const problems = results.filter((result) => result.state === 'refused' || result.state === 'unreachable').map((result) => result.problem);
  if (problems.length === 0) return `chat: no answer from the model (${rootCause(error)}); send your message again`;
  return `chat: no answer from the model: ${problems.join('; ')}; then send your message again`;
}
