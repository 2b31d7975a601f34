/**
 * The guidance feature on real FerretDB and Redis, built directly (as the composition root
 * would): a database of its own per rig, a Redis database of its own per test file (the change
 * stream's key is one per deployment), captured logs, the admin API on an express app.
 */
import express from 'express';
import { Redis } from 'ioredis';
import mongoose, { type Connection } from 'mongoose';
import { roster } from '../../roles/index.js';
import type { Config } from '../../src/config.js';
import type { GuidanceConfig } from '../../src/config/guidance.js';
import type { ModelProvider } from '../../src/model/provider.js';
import { createGuidanceFeature, type GuidanceFeature } from '../../src/guidance/feature.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import type { LogLine } from './harness.js';

export const GUIDANCE_ADMIN_TOKEN = 'guidance-admin-token-0123456789';
export const GUIDANCE_CHANNELS = new Map(['whatsapp', 'web', 'cli'].map((id) => [id, { promptFragment: `You are answering on ${id}.` }]));
/** No provider: a rig that simulates is handed its models. */
export const TEST_MODEL_CONFIG = {
  providers: { compatible: {} },
  fast: [],
  smart: [],
  vision: [],
  embedding: undefined,
  maxSteps: 5,
  maxOutputTokens: 512,
  timeoutMs: 10_000,
} as unknown as Config['model'];
export const TEST_GUIDANCE_CONFIG: GuidanceConfig = { promptTokens: 1500, judgeTokens: 400, checkEveryMs: 60_000, publishRequiresPass: false };

export interface GuidanceRig {
  feature: GuidanceFeature;
  app: express.Express;
  redis: Redis;
  connection: Connection;
  logs: LogLine[];
  metrics: Metrics;
  close(): Promise<void>;
}

export async function startGuidanceRig(options: {
  redisUrl: string;
  mongoUri: string;
  config?: Partial<GuidanceConfig>;
  models?: ModelProvider;
}): Promise<GuidanceRig> {
  const redis = new Redis(options.redisUrl);
  const connection = mongoose.createConnection(options.mongoUri, { serverSelectionTimeoutMS: 5000 });
  await connection.asPromise();
  const logs: LogLine[] = [];
  const logger = createLogger({ level: 'debug', sink: (line) => logs.push(JSON.parse(line) as LogLine) });
  const metrics = createMetrics();
  const feature = createGuidanceFeature(
    { redis, mongo: connection, logger, metrics },
    { guidance: { ...TEST_GUIDANCE_CONFIG, ...options.config }, adminToken: GUIDANCE_ADMIN_TOKEN, model: TEST_MODEL_CONFIG },
    { roles: roster, channels: () => GUIDANCE_CHANNELS, ...(options.models ? { models: options.models } : {}) },
  );
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
