/**
 * Retention: a scheduled purge of transcripts and hand-offs older than
 * TRANSCRIPT_RETENTION_DAYS. FerretDB has no TTL indexes, so a BullMQ job scheduler runs the
 * purge every few hours on one worker — the same code works on MongoDB, where the createdAt
 * indexes make it cheap.
 */
import { Queue, Worker, type ConnectionOptions } from 'bullmq';
import type { HandoffStore } from '../handoff/handoff-store.js';
import type { Logger } from '../logger.js';
import type { MediaStore } from '../media/media-store.js';
import type { Metrics } from '../metrics.js';
import type { TranscriptStore } from './transcript-store.js';

const MAINTENANCE_QUEUE = 'maintenance';
const PURGE_EVERY_MS = 6 * 60 * 60 * 1000;

export interface RetentionOptions {
  retentionDays: number;
  transcripts: Pick<TranscriptStore, 'purgeOlderThan'>;
  handoffs: Pick<HandoffStore, 'purgeOlderThan'>;
  /** Customers' media (GridFS) follows the transcripts' retention. */
  media?: Pick<MediaStore, 'purgeOlderThan'>;
  logger: Logger;
  metrics: Metrics;
  now?: () => number;
}

/** One purge pass; returns what it removed. */
export async function purgeExpired(options: RetentionOptions) {
  const cutoff = new Date((options.now ?? Date.now)() - options.retentionDays * 24 * 60 * 60 * 1000);
  const [transcripts, handoffs] = await Promise.all([options.transcripts.purgeOlderThan(cutoff), options.handoffs.purgeOlderThan(cutoff)]);
  const media = (await options.media?.purgeOlderThan(cutoff)) ?? 0;
  const removed = { ...transcripts, handoffs, media };
  options.metrics.increment('retention_purged_messages_total', {}, removed.messages);
  options.logger.info('retention-purged', { cutoff: cutoff.toISOString(), ...removed });
  return removed;
}

/** Registers the purge schedule (idempotent across processes) and a worker that runs it. */
async function startRetention(options: RetentionOptions & { connection: ConnectionOptions; prefix?: string }) {
  const queueOptions = { connection: options.connection, ...(options.prefix ? { prefix: options.prefix } : {}) };
  const queue = new Queue(MAINTENANCE_QUEUE, queueOptions);
  await queue.upsertJobScheduler('transcript-purge', { every: PURGE_EVERY_MS }, { name: 'purge', opts: { removeOnComplete: 10, removeOnFail: 10 } });
  const worker = new Worker(MAINTENANCE_QUEUE, async () => purgeExpired(options), { ...queueOptions, concurrency: 1 });
  worker.on('error', (error) => options.logger.error('retention-worker-error', { error }));
  return {
    queue,
    worker,
    async close() {
      await worker.close();
      await queue.close();
    },
  };
}

/**
 * The process's retention job: `start()` registers the schedule and its worker once (later
 * calls do nothing); a failure to start is logged, never thrown — turns go on without it.
 */
export function createRetention(options: RetentionOptions & { connection: ConnectionOptions; prefix?: string }) {
  let started: Promise<{ close(): Promise<void> } | undefined> | undefined;
  return {
    start(): void {
      started ??= startRetention(options).catch((error: unknown) => {
        options.logger.error('retention-start-failed', { error });
        return undefined;
      });
    },
    async close(): Promise<void> {
      await (await started)?.close();
    },
  };
}
