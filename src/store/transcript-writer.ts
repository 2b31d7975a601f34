/**
 * The transcript writer: drains the Redis outbox into MongoDB in batches, behind the
 * conversation. Every write is idempotent by `_id`: a message's fields are set (they never
 * change), its status set only on insert; a status applies only over a lower- or equal-ranked
 * one (later records win, a status never regresses) and lands even before its message's record
 * does; a conversation is created once and its `updatedAt` only moves forward. A batch's records
 * of one document are folded first (FerretDB/SQLite pays per statement, an update most): a
 * conversation's into one upsert; a message whose record is in the batch (nearly always new) is
 * inserted as its records leave it, with its statuses, in record order; from the first one
 * MongoDB already holds (a retried batch) on, messages get their records' own writes; delivery
 * ids are inserted. A conversation is named by its newest record's name, never an older one
 * arriving late (`conversation-writes.ts`). A conversation this writer wrote within the hour
 * (same name) is not written again: its `updatedAt` only serves retention; but a record whose name is new in Redis
 * (`nameChanged`: created or renamed) is always written, whatever this writer remembers (another
 * writer may have written another name since), so MongoDB's name ends as Redis's. Entries leave
 * the outbox only after MongoDB acknowledged them; a failed or slow write is retried with backoff
 * (the batch is kept), so a MongoDB outage only grows the backlog. A record MongoDB refuses
 * (anything but a duplicate key or a transient server state: an invalid key, a document over
 * 16 MiB) is found by writing the batch's entries, then that entry's records, one by one, and
 * goes to the outbox's dead-letter stream; the rest is written and the writer moves on. Records
 * the outbox could not read go there too. Runs in worker processes.
 */
import type { Connection } from 'mongoose';
import { errorText } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { DeadLetter, OutboxEntry, TranscriptOutbox, TranscriptRecord } from './outbox.js';
import { createBatchWriter, isRejection } from './transcript-batch.js';

export { ACTIONS_COLLECTION } from './transcript-batch.js';

const READ_BLOCK_MS = 1_000;
/**
 * After a batch smaller than TRANSCRIPT_WRITER_BATCH the writer waits this long before reading
 * again, so records gather into batches: its Redis commands stay a few per batch, not per record.
 */
const LINGER_MS = 100;
const WRITE_TIMEOUT_MS = 10_000;
const FIRST_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 5_000;

export interface TranscriptWriterOptions {
  connection: Connection;
  outbox: TranscriptOutbox;
  batchSize: number;
  logger: Logger;
  metrics: Metrics;
  /**
   * Told of records once MongoDB holds them (the reports' roll-ups, `src/reports/`), with each
   * record's mark (its outbox entry's id) when they came from the outbox; never throws.
   */
  rollup?: (records: readonly TranscriptRecord[], marks?: readonly string[]) => Promise<void>;
  /** Told the marks of entries that left the outbox (nothing brings them again); never throws. */
  rolledUp?: (marks: readonly string[]) => Promise<void>;
}

export interface TranscriptWriter {
  start(): void;
  /** Applies records to MongoDB (what one batch does; `marks`: each record's outbox entry id); exposed for the idempotence tests. */
  apply(records: readonly TranscriptRecord[], marks?: readonly string[]): Promise<void>;
  close(): Promise<void>;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`MongoDB did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Each record's mark: the id of the outbox entry it came in. */
const marksOf = (entries: readonly OutboxEntry[]) => entries.flatMap((entry) => entry.records.map(() => entry.id));

/**
 * A batch with a record MongoDB refuses: each entry written on its own, and an entry that is
 * refused, each of its records (in order); the records still refused are what it returns, to
 * be kept in the dead-letter stream. Every write is idempotent, so what the batch's failed
 * attempt wrote is written again harmlessly. A failure that is no refusal is thrown (retried).
 */
async function applyIsolating(
  apply: (records: readonly TranscriptRecord[], marks: readonly string[]) => Promise<void>,
  batch: readonly OutboxEntry[],
): Promise<DeadLetter[]> {
  const letters: DeadLetter[] = [];
  for (const entry of batch) {
    try {
      await apply(entry.records, marksOf([entry]));
      continue;
    } catch (error) {
      if (!isRejection(error)) throw error;
    }
    const refused: unknown[] = [];
    let reason = '';
    for (const [index, record] of entry.records.entries()) {
      try {
        await apply([record], [`${entry.id}/${index}`]);
      } catch (error) {
        if (!isRejection(error)) throw error;
        refused.push(record);
        reason ||= errorText(error);
      }
    }
    if (refused.length > 0) letters.push({ entryId: entry.id, reason: 'rejected', error: reason, records: refused });
  }
  return letters;
}

export function createTranscriptWriter(options: TranscriptWriterOptions): TranscriptWriter {
  const { outbox, logger, metrics } = options;
  const write = createBatchWriter(options.connection);
  const apply = async (records: readonly TranscriptRecord[], marks?: readonly string[]) => {
    await write(records);
    await options.rollup?.(records, marks);
  };
  let stopped = false;
  let running: Promise<void> | undefined;
  let wake: (() => void) | undefined;

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  const loop = async () => {
    let grouped = false;
    let batch: OutboxEntry[] | undefined;
    let backoff = FIRST_BACKOFF_MS;
    let failingSince: number | undefined;
    /** An apply that timed out but may still be writing. */
    let inFlight: Promise<void> | undefined;
    /** The batch that apply wrote after its timeout: acknowledged, so it is not written again. */
    let landed: OutboxEntry[] | undefined;
    /** What the batch's writing set aside (records MongoDB refused). */
    let refused: DeadLetter[] = [];
    /** The batch's last attempt failed on a record MongoDB refuses: the next one finds it. */
    let isolating = false;
    while (!stopped) {
      try {
        if (!grouped) {
          await outbox.ensureGroup();
          grouped = true;
        }
        batch ??= await outbox.read(options.batchSize, READ_BLOCK_MS);
        if (batch.length === 0) {
          batch = undefined;
          continue;
        }
        const records = batch.flatMap((entry) => entry.records);
        // Never a second apply beside one still writing: each holds FerretDB connections (see
        // MAX_STATEMENTS_PER_COMMAND), and retries piling up on a slow server wedged it too. Nor
        // the same batch again once it landed late: a batch slower than the timeout never left.
        if (inFlight) {
          await Promise.race([inFlight, pause(WRITE_TIMEOUT_MS)]);
          wake?.();
          continue;
        }
        if (landed !== batch) {
          const current = batch;
          const applying = isolating ? applyIsolating(apply, current) : apply(records, marksOf(current)).then((): DeadLetter[] => []);
          inFlight = applying.then(
            (letters) => {
              inFlight = undefined;
              landed = current;
              refused = letters;
            },
            () => (inFlight = undefined),
          );
          refused = await withTimeout(applying, WRITE_TIMEOUT_MS);
        }
        landed = undefined;
        // Kept before the entries leave the outbox (a crash in between keeps a dead letter twice, never none).
        const letters = [...batch.flatMap((entry) => (entry.unreadable ? [entry.unreadable] : [])), ...refused];
        if (letters.length > 0) await outbox.deadLetter(letters);
        await outbox.remove(batch.map((entry) => entry.id));
        await options.rolledUp?.(batch.map((entry) => entry.id));
        refused = [];
        isolating = false;
        const setAside = letters.reduce((sum, letter) => sum + (letter.reason === 'rejected' ? (letter.records?.length ?? 0) : 0), 0);
        metrics.increment('transcript_records_written_total', {}, records.length - setAside);
        if (failingSince !== undefined) logger.info('transcript-writer-recovered', { downMs: Date.now() - failingSince });
        const full = batch.length >= options.batchSize;
        batch = undefined;
        backoff = FIRST_BACKOFF_MS;
        failingSince = undefined;
        if (!full) await pause(LINGER_MS);
      } catch (error) {
        if (stopped) break;
        failingSince ??= Date.now();
        // A Redis that lost the group (restarted without its data): create it again.
        if (errorText(error).includes('NOGROUP')) grouped = false;
        if (batch && isRejection(error)) isolating = true;
        metrics.increment('transcript_write_failed_total');
        logger.warn('transcript-write-retrying', { entries: batch?.length ?? 0, backoffMs: backoff, error });
        await pause(backoff);
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
    }
  };

  return {
    apply,
    start() {
      if (running) return;
      // Both series exist (at 0) from the start, so an alert on them needs no absent() case.
      for (const reason of ['unreadable', 'rejected']) metrics.increment('transcript_dead_letter_total', { reason }, 0);
      running = loop().catch((error: unknown) => logger.error('transcript-writer-stopped', { error }));
    },
    async close() {
      stopped = true;
      wake?.();
      if (!running) return;
      // A read waiting for entries ends now (it has none): the loop sees it was stopped.
      await outbox.interrupt().catch((error: unknown) => logger.warn('transcript-outbox-interrupt-failed', { error }));
      await running;
      // Out of the outbox's group (kept while entries are pending for it: another writer takes them over).
      await outbox.leave().catch((error: unknown) => logger.warn('transcript-outbox-leave-failed', { error }));
    },
  };
}
