/** Redis and MongoDB; transcripts (signed links, retention, the outbox to MongoDB) and the usage flush. */
import { z } from 'zod';
import { positiveInt } from './fields.js';

export const storeFields = {
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'expected a redis:// or rediss:// URL')
    .default('redis://127.0.0.1:6379'),
  // Set: a Redis Cluster from these seed nodes (REDIS_URL then gives only credentials and TLS).
  REDIS_CLUSTER_NODES: z
    .string()
    .regex(/^\s*[^\s:,]+:\d{1,5}\s*(,\s*[^\s:,]+:\d{1,5}\s*)*$/, 'expected comma-separated host:port seed nodes, e.g. 10.0.0.1:6379,10.0.0.2:6379')
    .transform((value) =>
      value.split(',').map((node) => {
        const [host = '', port] = node.trim().split(':');
        return { host, port: Number(port) };
      }),
    )
    .optional(),
  MONGODB_URI: z
    .string()
    .regex(/^mongodb(\+srv)?:\/\//, 'expected a mongodb:// or mongodb+srv:// URI')
    .default('mongodb://127.0.0.1:27017/wa-assistant'),
};

export const transcriptFields = {
  TRANSCRIPT_LINK_SECRET: z.string().min(32, 'expected at least 32 characters').optional(),
  TRANSCRIPT_LINK_TTL_HOURS: positiveInt(72),
  TRANSCRIPT_RETENTION_DAYS: positiveInt(365),
};

export const outboxFields = {
  // The transcript outbox (Redis → MongoDB): new inbound is refused (503) at this many entries; records per writer batch.
  TRANSCRIPT_OUTBOX_MAX: positiveInt(200_000),
  TRANSCRIPT_WRITER_BATCH: positiveInt(200),

  // Off the per-turn MongoDB path: model usage is counted in Redis and written to MongoDB this often.
  // CONTACT_CACHE_TTL_SECONDS is no longer used (the caller index in Redis never expires); still
  // accepted so a deployment that sets it keeps starting.
  CONTACT_CACHE_TTL_SECONDS: z.string().optional(),
  USAGE_FLUSH_INTERVAL_MS: positiveInt(10_000),
};
