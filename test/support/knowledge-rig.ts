/**
 * The knowledge feature on real FerretDB and Redis, built directly (as the composition root
 * would): a database of its own per rig, a Redis database of its own per test file (the change
 * stream's key is one per deployment), captured logs.
 */
import { randomUUID } from 'node:crypto';
import express from 'express';
import { Redis } from 'ioredis';
import mongoose, { type Connection } from 'mongoose';
import type { KnowledgeConfig } from '../../src/config.js';
import { createKnowledgeFeature, type KnowledgeFeature, type KnowledgeFeatureOptions } from '../../src/knowledge/feature.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import type { LogLine } from './harness.js';

export const KNOWLEDGE_ADMIN_TOKEN = 'knowledge-admin-token-0123456789';

export const TEST_KNOWLEDGE_CONFIG: KnowledgeConfig = {
  sources: [],
  recrawlHours: 24,
  crawl: { maxPages: 50, maxDepth: 4, maxPageBytes: 1024 * 1024, maxCrawlBytes: 20 * 1024 * 1024, timeoutMs: 5_000 },
  maxDocumentBytes: 2 * 1024 * 1024,
  maxPassages: 5,
  maxPassageTokens: 1500,
};

/** A Redis URL on a database no other rig or harness of this run uses (the harness's allocator). */
export async function ownKnowledgeRedisUrl(): Promise<string> {
  const redisUrl = process.env.TEST_REDIS_URL;
  if (!redisUrl) throw new Error('TEST_REDIS_URL is not set');
  const allocator = new Redis(redisUrl, { maxRetriesPerRequest: 2 });
  try {
    const count = await allocator.incr('test:harness-databases');
    const url = new URL(redisUrl);
    url.pathname = `/${16 + ((count - 1) % (10_000 - 16))}`;
    return url.toString();
  } finally {
    allocator.disconnect();
  }
}

export function knowledgeMongoUri(database = `k_${randomUUID().replace(/-/g, '').slice(0, 12)}`): string {
  const mongoUri = process.env.TEST_MONGODB_URI;
  if (!mongoUri) throw new Error('TEST_MONGODB_URI is not set');
  const url = new URL(mongoUri);
  url.pathname = `/${database}`;
  return url.toString();
}

export interface KnowledgeRig {
  feature: KnowledgeFeature;
  app: express.Express;
  redis: Redis;
  connection: Connection;
  logs: LogLine[];
  metrics: Metrics;
  close(): Promise<void>;
}

export async function startKnowledgeRig(options: {
  redisUrl: string;
  mongoUri: string;
  config?: Partial<KnowledgeConfig>;
  scheduleEveryMs?: number;
  /** How often the rig's index is checked against MongoDB (the feature's default: a minute). */
  syncEveryMs?: number;
  /** Told of each miss (the reports' hook in the service). */
  onMiss?: KnowledgeFeatureOptions['onMiss'];
}): Promise<KnowledgeRig> {
  const redis = new Redis(options.redisUrl);
  const connection = mongoose.createConnection(options.mongoUri, { serverSelectionTimeoutMS: 5000 });
  await connection.asPromise();
  const logs: LogLine[] = [];
  const logger = createLogger({ level: 'debug', sink: (line) => logs.push(JSON.parse(line) as LogLine) });
  const metrics = createMetrics();
  const feature = await createKnowledgeFeature({
    redis,
    connection,
    logger,
    metrics,
    config: { ...TEST_KNOWLEDGE_CONFIG, ...options.config },
    adminToken: KNOWLEDGE_ADMIN_TOKEN,
    ...(options.scheduleEveryMs ? { scheduleEveryMs: options.scheduleEveryMs } : {}),
    ...(options.syncEveryMs ? { syncEveryMs: options.syncEveryMs } : {}),
    ...(options.onMiss ? { onMiss: options.onMiss } : {}),
  });
  const app = express();
  app.use(feature.router);
  feature.start();
  await feature.ready();
  return {
    feature,
    app,
    redis,
    connection,
    logs,
    metrics,
    async close() {
      await feature.close();
      await connection.close();
      redis.disconnect();
    },
  };
}
