/**
 * Retention: a scheduled purge of transcripts, hand-offs, media and the other stores' kinds
 * (`others`), each older than its own period (TRANSCRIPT_RETENTION_DAYS unless set). FerretDB has no TTL indexes, so a BullMQ job scheduler runs the
 * purge every few hours on one worker — the same code works on MongoDB, where the createdAt
 * indexes make it cheap. On the same queue: the sweep of uploads no message named within
 * UPLOAD_UNCLAIMED_TTL_MINUTES (read from Redis, deleted by `_id`), every minute or sooner, and
 * hourly the sweep of GridFS chunks left without a file (an upload cut off by a crash).
 */
import { Queue, Worker, type ConnectionOptions } from 'bullmq';
import type { Logger } from '../logger.js';
import type { MediaStore } from '../media/media-store.js';
import type { UploadClaims } from '../media/upload-claims.js';
import type { Metrics } from '../metrics.js';
import type { TranscriptStore } from './transcript-store.js';

const MAINTENANCE_QUEUE = 'maintenance';
const PURGE_EVERY_MS = 6 * 60 * 60 * 1000;
const ORPHAN_SWEEP_EVERY_MS = 60 * 60 * 1000;
/** A chunk without a file is an orphan once its file's newest chunk is this old (an upload in progress is younger: requests end within minutes). */
const ORPHAN_GRACE_MS = 15 * 60 * 1000;

/** The kinds of data kept for a period of their own (`Config['retention']`: TRANSCRIPT_RETENTION_DAYS unless set). */
export type RetentionKind = 'transcripts' | 'media' | 'handoffs' | 'ratings' | 'actions' | 'suggestions' | 'misses';

/** Where a kind's retention ends: what is older goes. */
export type CutoffOf = (kind: RetentionKind) => Date;

export interface RetentionOptions {
  /** Days per kind; a kind left out is kept `transcripts` days. */
  days: Partial<Record<RetentionKind, number>> & { transcripts: number };
  transcripts: Pick<TranscriptStore, 'purgeOlderThan'>;
  /** The hand-off store's purge (typed here: src/handoff depends on src/store, not the reverse). */
  handoffs: { purgeOlderThan(cutoff: Date): Promise<number> };
  /** Customers' media (GridFS). */
  media?: Pick<MediaStore, 'purgeOlderThan' | 'remove' | 'sweepOrphanChunks'>;
  /** Other stores' purges, each by the cutoffs of its kinds (a person's ratings, suggestions, …); counts by store. */
  others?: { purgeOlderThan(cutoffOf: CutoffOf): Promise<Record<string, number>> }[];
  /** Uploads no message named: deleted once their TTL (`unclaimedTtlMs`, which sets how often to sweep) ends. */
  uploads?: { claims: Pick<UploadClaims, 'sweep'>; unclaimedTtlMs: number };
  logger: Logger;
  metrics: Metrics;
  now?: () => number;
}

/** One purge pass, each kind by its own period; returns what it removed. */
export async function purgeExpired(options: RetentionOptions) {
  const at = (options.now ?? Date.now)();
  const cutoffOf: CutoffOf = (kind) => new Date(at - (options.days[kind] ?? options.days.transcripts) * 24 * 60 * 60 * 1000);
  const [transcripts, handoffs] = await Promise.all([
    options.transcripts.purgeOlderThan(cutoffOf('transcripts')),
    options.handoffs.purgeOlderThan(cutoffOf('handoffs')),
  ]);
  const media = (await options.media?.purgeOlderThan(cutoffOf('media'))) ?? 0;
  const others: Record<string, number> = {};
  for (const target of options.others ?? []) Object.assign(others, await target.purgeOlderThan(cutoffOf));
  const removed = { ...transcripts, handoffs, media, ...others };
  options.metrics.increment('retention_purged_messages_total', {}, removed.messages);
  options.logger.info('retention-purged', { cutoff: cutoffOf('transcripts').toISOString(), ...removed });
  return removed;
}

/** One sweep of uploads no message named within their TTL; returns how many were deleted. */
async function sweepUnclaimedUploads(options: Pick<RetentionOptions, 'media' | 'uploads' | 'logger' | 'metrics' | 'now'>): Promise<number> {
  const { media, uploads } = options;
  if (!media || !uploads) return 0;
  const removed = await uploads.claims.sweep((options.now ?? Date.now)(), (id) => media.remove(id));
  if (removed > 0) {
    options.metrics.increment('uploads_unclaimed_deleted_total', {}, removed);
    options.logger.info('uploads-unclaimed-deleted', { removed });
  }
  return removed;
}

/** One sweep of GridFS chunks whose file has no record; returns how many files' chunks went. */
export async function sweepOrphanChunks(options: Pick<RetentionOptions, 'media' | 'logger' | 'now'>): Promise<number> {
  const swept = (await options.media?.sweepOrphanChunks(new Date((options.now ?? Date.now)() - ORPHAN_GRACE_MS))) ?? 0;
  if (swept > 0) options.logger.warn('media-orphan-chunks-deleted', { files: swept });
  return swept;
}

/** Registers the purge and sweep schedules (idempotent across processes) and a worker that runs them. */
async function startRetention(options: RetentionOptions & { connection: ConnectionOptions; prefix?: string }) {
  const queueOptions = { connection: options.connection, ...(options.prefix ? { prefix: options.prefix } : {}) };
  const queue = new Queue(MAINTENANCE_QUEUE, queueOptions);
  const kept = { removeOnComplete: 10, removeOnFail: 10 };
  await queue.upsertJobScheduler('transcript-purge', { every: PURGE_EVERY_MS }, { name: 'purge', opts: kept });
  if (options.uploads && options.media) {
    const every = Math.min(60_000, Math.max(1_000, Math.round(options.uploads.unclaimedTtlMs / 4)));
    await queue.upsertJobScheduler('upload-sweep', { every }, { name: 'upload-sweep', opts: kept });
    await queue.upsertJobScheduler('orphan-chunk-sweep', { every: ORPHAN_SWEEP_EVERY_MS }, { name: 'orphan-chunk-sweep', opts: kept });
  }
  const worker = new Worker(
    MAINTENANCE_QUEUE,
    async (job) => {
      if (job.name === 'upload-sweep') return sweepUnclaimedUploads(options);
      if (job.name === 'orphan-chunk-sweep') return sweepOrphanChunks(options);
      return purgeExpired(options);
    },
    // Two at once: a long purge does not hold up the upload sweep.
    { ...queueOptions, concurrency: 2 },
  );
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
