/**
 * Transcripts as a feature: the outbox their records travel in (watched for its backlog), the
 * transcript store (hot copy in Redis, records in MongoDB), the worker's transcript writer, the
 * one-off rebuild of recent history, the model usage totals (a turn's knowledge miss rides in its
 * usage entry: the fold hands it to the knowledge's list), and the retention purge.
 */
import type { Config } from '../config.js';
import type { Infrastructure } from '../infrastructure.js';
import { createRedis } from '../redis.js';
import { createTranscriptOutbox, type TranscriptRecord } from './outbox.js';
import { createRecentBackfill } from './recent-backfill.js';
import { createRetention, type RetentionOptions } from './retention.js';
import { createTranscriptStore } from './transcript-store.js';
import { createTranscriptWriter } from './transcript-writer.js';
import { createUsageStore, utcDay, type UsageFolded, type UsageMiss, type UsageStore } from './usage-store.js';

export function createStoreFeature(
  infra: Infrastructure,
  config: Pick<Config, 'redisUrl' | 'redisClusterNodes' | 'transcriptOutbox' | 'offload' | 'model' | 'retention'>,
  /** The reports' roll-ups: told of what the writer wrote and of each turn's model usage. */
  reports?: {
    recordTranscripts(records: readonly TranscriptRecord[], marks?: readonly string[]): Promise<void>;
    releaseTranscripts(marks: readonly string[]): Promise<void>;
    recordUsage(folded: readonly UsageFolded[], misses?: readonly UsageMiss[]): Promise<void>;
  },
) {
  const { redis, mongo, mongoLink, logger, metrics } = infra;
  const reader = createRedis(config, 'blocking');
  const outbox = createTranscriptOutbox({
    redis,
    reader,
    maxBacklog: config.transcriptOutbox.max,
    database: mongoLink.databaseName,
    logger,
    metrics,
  });
  const stopWatch = outbox.watch();
  const transcripts = createTranscriptStore(mongo, { redis, outbox });
  const writer = createTranscriptWriter({
    connection: mongo,
    outbox,
    batchSize: config.transcriptOutbox.batchSize,
    logger,
    metrics,
    ...(reports ? { rollup: reports.recordTranscripts, rolledUp: reports.releaseTranscripts } : {}),
  });
  mongoLink.whenConnected('transcript indexes', () => transcripts.ensureIndexes());
  // After Redis lost its data (or over existing data): recent history rebuilt from MongoDB's messages once (by the workers).
  const backfill = createRecentBackfill({
    redis,
    conversations: transcripts.conversations,
    messages: transcripts.messages,
    database: mongoLink.databaseName,
    logger,
  });
  // The knowledge lists (`pendingMisses`), and the reports count, model use and knowledge misses from what each usage fold took (every few seconds), not per turn.
  let listMisses: ((notes: readonly string[]) => Promise<unknown>) | undefined;
  const onFold = async (folded: readonly UsageFolded[], missed: readonly UsageMiss[], notes: readonly string[]) => {
    if (notes.length > 0) await listMisses?.(notes);
    await reports?.recordUsage(folded, missed);
  };
  const usage = createUsageStore(mongo, redis, { flushIntervalMs: config.offload.usageFlushIntervalMs, logger, onFold });
  let retention: ReturnType<typeof createRetention> | undefined;

  return {
    outbox,
    transcripts,
    /** A finished turn's model usage, counted for today, and its knowledge miss (listed with the fold). */
    recordUsage: async (turn: Omit<Parameters<UsageStore['record']>[0], 'day'>) => {
      await usage.record({ day: utcDay(new Date()), ...turn });
    },
    /** The misses turns' usage entries carry: the knowledge's list is told of each fold's (`listWith`), and folds first to read them (`fold`). */
    pendingMisses: {
      listWith(list: (notes: readonly string[]) => Promise<unknown>): void {
        listMisses = list;
      },
      fold: () => usage.fold(),
    },
    usageReport: { summary: (from: string, to: string) => usage.summary(from, to, config.model.prices) },
    /** What the retention purge removes besides transcripts (hand-offs, media, unclaimed uploads). */
    purgeAlso(targets: Pick<RetentionOptions, 'handoffs' | 'media' | 'uploads' | 'others'>): void {
      retention = createRetention({
        connection: infra.bull,
        prefix: infra.queuePrefix,
        days: config.retention,
        transcripts,
        ...targets,
        logger,
        metrics,
      });
    },
    /** Once per process, by the workers. */
    startRetention: () => retention?.start(),
    start(): void {
      writer.start();
      usage.start();
      mongoLink.whenConnected('recent history copy', async (signal) => void (await backfill.run(signal)));
    },
    /** The purge schedule, and the outbox's backlog watch (first on shutdown). */
    async stopBackground(): Promise<void> {
      await retention?.close();
      stopWatch();
    },
    closeUsage: () => usage.close(),
    /** After the workers: the records their last turns appended are written if MongoDB answers. */
    async close(): Promise<void> {
      await writer.close();
      await reader.quit().catch(() => undefined);
    },
  };
}
