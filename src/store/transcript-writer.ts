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
import { LRUCache } from 'lru-cache';
import mongoose, { type Connection, type mongo } from 'mongoose';
import { errorText } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { conversationWrite, foldConversation, writeConversations, type ConversationFold, type ConversationWrite } from './conversation-writes.js';
import type { DeadLetter, OutboxEntry, TranscriptOutbox, TranscriptRecord } from './outbox.js';
import { statusRank, transcriptModels, type MessageRecord, type MessageStatus } from './transcript-store.js';

const READ_BLOCK_MS = 1_000;
/** Where confirmed actions' records go (`action` outbox records, see src/actions/). */
export const ACTIONS_COLLECTION = 'actions';
/**
 * After a batch smaller than TRANSCRIPT_WRITER_BATCH the writer waits this long before reading
 * again, so records gather into batches: its Redis commands stay a few per batch, not per record.
 */
const LINGER_MS = 100;
const WRITE_TIMEOUT_MS = 10_000;
/**
 * Statements per `bulkWrite` command. FerretDB 1.x on SQLite keeps one of its 100 pooled
 * connections per update that matched a document until the whole command ends; a command of
 * ~100 such updates waits forever for a connection, and so does every client after it (the
 * server is wedged until restarted). A few writers of 20 each stay well under the pool.
 */
const MAX_STATEMENTS_PER_COMMAND = 20;
/**
 * A conversation's `updatedAt` only keeps it from retention (days): a writer that wrote it (same
 * name) within this long of a record's time skips that write (the upsert was one of four
 * statements per message, and an update is what FerretDB pays most for).
 */
const CONVERSATION_TOUCH_MS = 60 * 60 * 1000;
/** Conversations whose last write a writer remembers (the least recent forgotten: written again). */
const CONVERSATION_TOUCH_MEMORY = 50_000;
const FIRST_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 5_000;

export interface TranscriptWriterOptions {
  connection: Connection;
  outbox: TranscriptOutbox;
  batchSize: number;
  logger: Logger;
  metrics: Metrics;
  /** Told of records once MongoDB holds them (the reports' roll-ups, `src/reports/`); never throws. */
  rollup?: (records: readonly TranscriptRecord[]) => Promise<void>;
}

export interface TranscriptWriter {
  start(): void;
  /** Applies records to MongoDB (what one batch does); exposed for the idempotence tests. */
  apply(records: readonly TranscriptRecord[]): Promise<void>;
  close(): Promise<void>;
}

/** Statuses a record with `status` may overwrite: same or lower rank (later records win). */
function overwritable(status: MessageStatus): MessageStatus[] {
  return (Object.keys(statusRank) as MessageStatus[]).filter((from) => statusRank[from] <= statusRank[status]);
}

/**
 * Documents per `insert` command. FerretDB inserts them in one SQLite transaction (its own batch
 * is 100) and holds no connection per document, so inserts need not be cut as small as updates.
 */
const MAX_DOCUMENTS_PER_INSERT = 100;
/** MongoDB's (and FerretDB's) duplicate key error: the document is already there. */
const DUPLICATE_KEY = 11000;

type MessageGroupRecord = Extract<TranscriptRecord, { kind: 'message' | 'status' }>;

/** One record's own writes: idempotent by `_id`, whether or not MongoDB holds its message yet. */
function messageWrites(record: MessageGroupRecord): mongo.AnyBulkWriteOperation<MessageRecord>[] {
  if (record.kind === 'message') {
    const { createdAt, updatedAt, status, errorMessage, ...fixed } = record.message;
    const document = { ...fixed, createdAt: new Date(createdAt) };
    // What a message is never changes (the ledger's first stored reply wins), so it is set
    // every time; its status only when it is new: a status record may have landed first
    // (its entry read by a writer that died, taken over after later entries were written).
    return [
      {
        updateOne: {
          filter: { _id: document._id },
          update: { $set: document, $setOnInsert: { status, updatedAt: new Date(updatedAt), ...(errorMessage ? { errorMessage } : {}) } },
          upsert: true,
        },
      },
    ];
  }
  const { _id, status, at, kind: _kind, ...fields } = record;
  const update = { status, ...fields, updatedAt: new Date(at) };
  // Before its message record, it creates the document (the message's fields, and its
  // createdAt, follow); after, it applies only over a lower- or equal-ranked status.
  return [
    { updateOne: { filter: { _id }, update: { $setOnInsert: { ...update, createdAt: new Date(at) } }, upsert: true } },
    { updateOne: { filter: { _id, status: { $in: overwritable(status) } }, update: { $set: update } } },
  ];
}

/** The document a message's records leave when MongoDB does not hold it yet (their writes, in order, on nothing). */
function foldNew(group: readonly MessageGroupRecord[]): Record<string, unknown> {
  let document: Record<string, unknown> | undefined;
  for (const record of group) {
    if (record.kind === 'message') {
      const { createdAt, updatedAt, status, errorMessage, ...fixed } = record.message;
      document = document
        ? { ...document, ...fixed, createdAt: new Date(createdAt) }
        : { ...fixed, createdAt: new Date(createdAt), status, updatedAt: new Date(updatedAt), ...(errorMessage ? { errorMessage } : {}) };
      continue;
    }
    const { _id, status, at, kind: _kind, ...fields } = record;
    const update = { status, ...fields, updatedAt: new Date(at) };
    document ??= { _id, ...update, createdAt: new Date(at) };
    if (statusRank[document.status as MessageStatus] <= statusRank[status]) document = { ...document, ...update };
  }
  return document ?? {};
}

/**
 * Server error codes that say nothing about the document (the server's state, a race): the
 * write is retried, never set aside. 1 is FerretDB's InternalError (its backend failing).
 */
const TRANSIENT_CODES: ReadonlySet<number> = new Set([1, 6, 7, 24, 46, 50, 89, 91, 112, 189, 262, 9001, 10107, 11000, 11600, 11602, 13435, 13436]);

/** Whether MongoDB (or the driver, before sending) refused what was written: writing it again fails the same way. */
function isRejection(error: unknown): boolean {
  const { MongoServerError, MongoBulkWriteError, MongoInvalidArgumentError, BSON } = mongoose.mongo;
  if (error instanceof MongoInvalidArgumentError || error instanceof BSON.BSONError || error instanceof RangeError) return true;
  if (!(error instanceof MongoServerError)) return false;
  if (error.hasErrorLabel('RetryableWriteError') || error.hasErrorLabel('TransientTransactionError')) return false;
  const writeErrors = error instanceof MongoBulkWriteError ? [error.writeErrors].flat() : [];
  const codes = writeErrors.length > 0 ? writeErrors.map((failure) => failure.code) : [error.code];
  return codes.every((code) => typeof code === 'number' && !TRANSIENT_CODES.has(code));
}

/** The duplicate key errors of a failed insert (the documents MongoDB already held); rethrows any other failure. */
function duplicates(error: unknown): number[] {
  if (!(error instanceof mongoose.mongo.MongoBulkWriteError)) throw error;
  const failures = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
  // Anything but "already there" (or a failure with no write errors at all) fails the batch, which is retried.
  if (failures.length === 0 || failures.some((failure) => failure.code !== DUPLICATE_KEY)) throw error;
  return failures.map((failure) => failure.index);
}

/** Inserts documents, skipping those MongoDB already holds (unordered: where nothing else is to be written). */
async function insertAbsent(collection: mongo.Collection, documents: readonly Record<string, unknown>[]): Promise<void> {
  for (let start = 0; start < documents.length; start += MAX_DOCUMENTS_PER_INSERT) {
    try {
      await collection.insertMany(documents.slice(start, start + MAX_DOCUMENTS_PER_INSERT), { ordered: false });
    } catch (error) {
      duplicates(error);
    }
  }
}

/**
 * Inserts documents in order until one MongoDB already holds stops the command there; from that
 * one on, `held` writes them another way (a retried batch: the rest is most likely held too). No
 * document's writes overtake an earlier record's (an apology never shows before its message is
 * marked failed).
 */
async function insertInOrder(
  collection: mongo.Collection,
  documents: readonly Record<string, unknown>[],
  held: (from: number) => Promise<void>,
): Promise<void> {
  for (let start = 0; start < documents.length; start += MAX_DOCUMENTS_PER_INSERT) {
    try {
      await collection.insertMany(documents.slice(start, start + MAX_DOCUMENTS_PER_INSERT), { ordered: true });
    } catch (error) {
      const [index = 0] = duplicates(error);
      await held(start + index);
      return;
    }
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`MongoDB did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export function createTranscriptWriter(options: TranscriptWriterOptions): TranscriptWriter {
  const { outbox, logger, metrics } = options;
  const { conversations, messages, deliveries } = transcriptModels(options.connection);
  let stopped = false;
  let running: Promise<void> | undefined;
  let wake: (() => void) | undefined;
  /** What this writer last wrote of each conversation: `updatedAt` (ms) and name. */
  const conversationsWritten = new LRUCache<string, { at: number; displayName: string | undefined }>({ max: CONVERSATION_TOUCH_MEMORY });
  /** Whether a conversation's write of `at` (and `displayName`, when given) adds nothing retention or a name needs. */
  const freshEnough = (_id: string, at: Date, displayName?: string) => {
    const written = conversationsWritten.get(_id);
    return written !== undefined && at.getTime() - written.at <= CONVERSATION_TOUCH_MS && (displayName === undefined || displayName === written.displayName);
  };

  const apply = async (records: readonly TranscriptRecord[]) => {
    const conversationOps: ConversationWrite[] = [];
    const deliveryDocs = new Map<string, { _id: string; messageId: string; createdAt: Date }>();
    const touched = new Map<string, Date>();
    /** A conversation's records folded into one upsert (src/store/conversation-writes.ts). */
    const conversationFolds = new Map<string, ConversationFold>();
    /** Each message's records in order (one document each). */
    const messageGroups = new Map<string, MessageGroupRecord[]>();
    const actionDocs = new Map<string, { _id: string; updatedAt: string } & Record<string, unknown>>();
    for (const record of records) {
      switch (record.kind) {
        case 'conversation':
          foldConversation(conversationFolds, record);
          break;
        case 'message':
        case 'status': {
          const _id = record.kind === 'message' ? record.message._id : record._id;
          const group = messageGroups.get(_id);
          if (group) group.push(record);
          else messageGroups.set(_id, [record]);
          if (record.kind === 'message' && record.message.direction === 'inbound') {
            const createdAt = new Date(record.message.createdAt);
            const seen = touched.get(record.message.conversationId);
            if (!seen || seen < createdAt) touched.set(record.message.conversationId, createdAt);
          }
          break;
        }
        case 'action': {
          // Actions (src/actions/): the latest step of each wins (records of one action come in order).
          const known = actionDocs.get(record.action._id);
          if (!known || known.updatedAt <= record.action.updatedAt) actionDocs.set(record.action._id, record.action);
          break;
        }
        case 'delivery':
          // An insert of an existing id changes nothing (the first record wins, as an upsert's $setOnInsert would).
          if (!deliveryDocs.has(record._id)) deliveryDocs.set(record._id, { _id: record._id, messageId: record.messageId, createdAt: new Date(record.at) });
          break;
      }
    }
    /** The conversations this batch writes: `updatedAt` and name, remembered once MongoDB acknowledged them. */
    const conversationWrites = new Map<string, { at: number; displayName: string | undefined }>();
    for (const [_id, fold] of conversationFolds) {
      const inbound = touched.get(_id);
      touched.delete(_id);
      const updatedAt = inbound && inbound > fold.updatedAt ? inbound : fold.updatedAt;
      if (!fold.changed && freshEnough(_id, updatedAt, fold.displayName)) continue;
      conversationWrites.set(_id, { at: updatedAt.getTime(), displayName: fold.displayName ?? conversationsWritten.get(_id)?.displayName });
      conversationOps.push(conversationWrite(_id, fold, updatedAt));
    }
    // A conversation with new inbound messages stays recent for retention (never created here).
    for (const [_id, at] of touched) {
      if (freshEnough(_id, at)) continue;
      conversationWrites.set(_id, { at: at.getTime(), displayName: conversationsWritten.get(_id)?.displayName });
      conversationOps.push({ op: { updateOne: { filter: { _id }, update: { $max: { updatedAt: at } } } } });
    }
    // A message whose record is in the batch is inserted as its records leave it (nearly always
    // new: one insert, not an upsert and two updates per status); from one MongoDB already holds
    // (a retried batch) on, messages get their records' own writes, rank rule and all.
    const inserts: Record<string, unknown>[] = [];
    const insertFallbacks: mongo.AnyBulkWriteOperation<MessageRecord>[][] = [];
    const messageOps: mongo.AnyBulkWriteOperation<MessageRecord>[] = [];
    for (const group of messageGroups.values()) {
      const writes = group.flatMap(messageWrites);
      const folded = group.some((record) => record.kind === 'message') ? foldNew(group) : undefined;
      if (folded) {
        inserts.push(folded);
        insertFallbacks.push(writes);
      } else messageOps.push(...writes);
    }
    // The driver's collections, not mongoose's casting (which drops a `$set` of the immutable
    // `createdAt`): conversations first, then messages (inserted in record order, then statuses
    // of messages written before), then delivery ids. Updates in commands of
    // MAX_STATEMENTS_PER_COMMAND, one after another (a message's writes keep their order).
    const write = async (collection: mongo.Collection, ops: readonly mongo.AnyBulkWriteOperation[]) => {
      for (let start = 0; start < ops.length; start += MAX_STATEMENTS_PER_COMMAND) {
        await collection.bulkWrite(ops.slice(start, start + MAX_STATEMENTS_PER_COMMAND), { ordered: true });
      }
    };
    await writeConversations(conversations.collection, conversationOps, MAX_STATEMENTS_PER_COMMAND);
    for (const [_id, written] of conversationWrites) conversationsWritten.set(_id, written);
    await insertInOrder(messages.collection, inserts, (from) =>
      write(messages.collection, insertFallbacks.slice(from).flat() as mongo.AnyBulkWriteOperation[]),
    );
    await write(messages.collection, messageOps as mongo.AnyBulkWriteOperation[]);
    await insertAbsent(deliveries.collection, [...deliveryDocs.values()]);
    await write(
      options.connection.collection<{ _id: string }>(ACTIONS_COLLECTION) as unknown as mongo.Collection,
      [...actionDocs.values()].map(({ _id, ...fields }) => ({
        replaceOne: { filter: { _id }, replacement: fields, upsert: true },
      })) as unknown as mongo.AnyBulkWriteOperation[],
    );
    await options.rollup?.(records);
  };

  /**
   * A batch with a record MongoDB refuses: each entry written on its own, and an entry that is
   * refused, each of its records (in order); the records still refused are what it returns, to
   * be kept in the dead-letter stream. Every write is idempotent, so what the batch's failed
   * attempt wrote is written again harmlessly. A failure that is no refusal is thrown (retried).
   */
  const applyIsolating = async (batch: readonly OutboxEntry[]): Promise<DeadLetter[]> => {
    const letters: DeadLetter[] = [];
    for (const entry of batch) {
      try {
        await apply(entry.records);
        continue;
      } catch (error) {
        if (!isRejection(error)) throw error;
      }
      const refused: unknown[] = [];
      let reason = '';
      for (const record of entry.records) {
        try {
          await apply([record]);
        } catch (error) {
          if (!isRejection(error)) throw error;
          refused.push(record);
          reason ||= errorText(error);
        }
      }
      if (refused.length > 0) letters.push({ entryId: entry.id, reason: 'rejected', error: reason, records: refused });
    }
    return letters;
  };

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
          const applying = isolating ? applyIsolating(current) : apply(records).then((): DeadLetter[] => []);
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
      await running;
      // Out of the outbox's group (kept while entries are pending for it: another writer takes them over).
      await outbox.leave().catch((error: unknown) => logger.warn('transcript-outbox-leave-failed', { error }));
    },
  };
}
