/**
 * What every feature is built on: the logger, the metrics, the Redis connections (commands and
 * BullMQ's blocking one), MongoDB (opened in the background: no process waits on it to start)
 * and the process's draining signal. Each feature factory (`src/<feature>/feature.ts`) takes it
 * with its own slice of the configuration; the composition root builds it once.
 */
import type { Connection } from 'mongoose';
import { configuredSecrets, type Config } from './config.js';
import { createLogger, logIdKey, pseudonymous, redactSecrets, type Logger } from './logger.js';
import { createMetrics, type Metrics } from './metrics.js';
import { createRedis, QUEUE_PREFIX, type RedisClient } from './redis.js';
import { openMongo, type MongoLink } from './store/mongo-connection.js';
import { checkRedisEviction, checkRedisPersistence } from './store/redis-persistence.js';

export interface Infrastructure {
  logger: Logger;
  metrics: Metrics;
  redis: RedisClient;
  /** BullMQ's connection (blocking commands), shared by the process's queues and workers. */
  bull: RedisClient;
  /** BullMQ key prefix (`QUEUE_PREFIX` unless a test gives its own). */
  queuePrefix: string;
  mongo: Connection;
  mongoLink: MongoLink;
  /** Aborted when the process starts draining. */
  shutdown: AbortSignal;
}

/** A readiness check of the app (`degradable`: failing, the service is `degraded`, not down). */
export interface ReadinessCheck {
  name: string;
  check(): Promise<void>;
  degradable?: boolean;
}

export async function createInfrastructure(config: Config, options: { logger?: Logger | undefined; queuePrefix?: string | undefined }) {
  const redacted = redactSecrets(options.logger ?? createLogger({ level: config.logLevel }), configuredSecrets(config));
  const logger = config.logPersonIds === 'plain' ? redacted : pseudonymous(redacted, logIdKey(config.transcriptLinks.secret));
  const redis = createRedis(config);
  const bull = createRedis(config, 'blocking');
  // Never waited on: a process starts and answers during a MongoDB outage (indexes follow when it answers).
  const mongoLink = openMongo(config.mongodbUri, logger);
  await checkRedisPersistence(redis, logger);
  await checkRedisEviction(redis, logger);
  const draining = new AbortController();
  let shuttingDown = false;
  const metrics = createMetrics();
  const infra: Infrastructure = {
    logger,
    metrics,
    redis,
    bull,
    queuePrefix: options.queuePrefix ?? QUEUE_PREFIX,
    mongo: mongoLink.connection,
    mongoLink,
    shutdown: draining.signal,
  };
  return {
    infra,
    readiness: [
      { name: 'redis', check: async () => void (await redis.ping()) },
      // Turns never wait on MongoDB (the transcript outbox does): down or slow, it is `degraded`.
      { name: 'mongodb', check: () => mongoLink.ping(), degradable: true },
    ] satisfies ReadinessCheck[],
    /** The HTTP app's own settings: proxies trusted, who may read /metrics, whether it is draining. */
    app: {
      trustProxy: config.trustProxy,
      logger,
      metrics,
      isShuttingDown: () => shuttingDown,
      metricsAccess: { ownListener: config.metrics.port !== undefined, token: config.metrics.token },
    },
    /** Readiness fails from now on, and every feature listening to `shutdown` drains. */
    beginShutdown(): void {
      shuttingDown = true;
      draining.abort();
    },
    /** The connections, last. */
    async close(): Promise<void> {
      await Promise.allSettled([redis.quit(), bull.quit(), mongoLink.close()]);
    },
  };
}
