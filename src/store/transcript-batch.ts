/**
 * What one batch of the transcript writer does to MongoDB (`transcript-writer.ts` reads, retries
 * and acknowledges): its records grouped by document and folded (a conversation's into one
 * upsert, a message new to MongoDB into one insert), then written conversations first, messages
 * in record order, delivery ids, actions; updates in commands of MAX_STATEMENTS_PER_COMMAND.
 * Every write is by `_id` and idempotent.
 */
import { LRUCache } from 'lru-cache';
import mongoose, { type Connection, type mongo } from 'mongoose';
import { conversationWrite, foldConversation, writeConversations, type ConversationFold, type ConversationWrite } from './conversation-writes.js';
import type { TranscriptRecord } from './outbox.js';
import { transcriptModels } from './transcript-schemas.js';
import { statusRank, type MessageRecord, type MessageStatus } from './transcript-types.js';

/** Where confirmed actions' records go (`action` outbox records, see src/actions/). */
export const ACTIONS_COLLECTION = 'actions';
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
export function isRejection(error: unknown): boolean {
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

type Written = LRUCache<string, { at: number; displayName: string | undefined }>;

/** A batch's records by document: what `apply` writes. */
interface Grouped {
  /** A conversation's records folded into one upsert (src/store/conversation-writes.ts). */
  conversationFolds: Map<string, ConversationFold>;
  /** The newest inbound message's time of each conversation that has one in the batch. */
  touched: Map<string, Date>;
  /** Each message's records in order (one document each). */
  messageGroups: Map<string, MessageGroupRecord[]>;
  actionDocs: Map<string, { _id: string; updatedAt: string } & Record<string, unknown>>;
  deliveryDocs: Map<string, { _id: string; messageId: string; createdAt: Date }>;
}

function groupRecords(records: readonly TranscriptRecord[]): Grouped {
  const grouped: Grouped = { conversationFolds: new Map(), touched: new Map(), messageGroups: new Map(), actionDocs: new Map(), deliveryDocs: new Map() };
  const { conversationFolds, touched, messageGroups, actionDocs, deliveryDocs } = grouped;
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
  return grouped;
}

/**
 * The batch's conversation writes, and what each leaves (`updatedAt`, name) to remember once
 * MongoDB acknowledged them. Consumes `touched`.
 */
function planConversations({ conversationFolds, touched }: Grouped, written: Written) {
  /** Whether a conversation's write of `at` (and `displayName`, when given) adds nothing retention or a name needs. */
  const freshEnough = (_id: string, at: Date, displayName?: string) => {
    const last = written.get(_id);
    return last !== undefined && at.getTime() - last.at <= CONVERSATION_TOUCH_MS && (displayName === undefined || displayName === last.displayName);
  };
  const ops: ConversationWrite[] = [];
  const writes = new Map<string, { at: number; displayName: string | undefined }>();
  for (const [_id, fold] of conversationFolds) {
    const inbound = touched.get(_id);
    touched.delete(_id);
    const updatedAt = inbound && inbound > fold.updatedAt ? inbound : fold.updatedAt;
    if (!fold.changed && freshEnough(_id, updatedAt, fold.displayName)) continue;
    writes.set(_id, { at: updatedAt.getTime(), displayName: fold.displayName ?? written.get(_id)?.displayName });
    ops.push(conversationWrite(_id, fold, updatedAt));
  }
  // A conversation with new inbound messages stays recent for retention (never created here).
  for (const [_id, at] of touched) {
    if (freshEnough(_id, at)) continue;
    writes.set(_id, { at: at.getTime(), displayName: written.get(_id)?.displayName });
    ops.push({ op: { updateOne: { filter: { _id }, update: { $max: { updatedAt: at } } } } });
  }
  return { ops, writes };
}

/**
 * A message whose record is in the batch is inserted as its records leave it (nearly always
 * new: one insert, not an upsert and two updates per status); from one MongoDB already holds
 * (a retried batch) on, messages get their records' own writes, rank rule and all.
 */
function planMessages(messageGroups: Grouped['messageGroups']) {
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
  return { inserts, insertFallbacks, messageOps };
}

/** Updates in commands of MAX_STATEMENTS_PER_COMMAND, one after another (a message's writes keep their order). */
async function write(collection: mongo.Collection, ops: readonly mongo.AnyBulkWriteOperation[]): Promise<void> {
  for (let start = 0; start < ops.length; start += MAX_STATEMENTS_PER_COMMAND) {
    await collection.bulkWrite(ops.slice(start, start + MAX_STATEMENTS_PER_COMMAND), { ordered: true });
  }
}

/** Applies records to MongoDB (what one batch does), remembering the conversations it wrote. */
export function createBatchWriter(connection: Connection): (records: readonly TranscriptRecord[]) => Promise<void> {
  const { conversations, messages, deliveries } = transcriptModels(connection);
  /** What this writer last wrote of each conversation: `updatedAt` (ms) and name. */
  const conversationsWritten: Written = new LRUCache({ max: CONVERSATION_TOUCH_MEMORY });

  return async (records) => {
    const grouped = groupRecords(records);
    const conversationPlan = planConversations(grouped, conversationsWritten);
    const { inserts, insertFallbacks, messageOps } = planMessages(grouped.messageGroups);
    // The driver's collections, not mongoose's casting (which drops a `$set` of the immutable
    // `createdAt`): conversations first, then messages (inserted in record order, then statuses
    // of messages written before), then delivery ids.
    await writeConversations(conversations.collection, conversationPlan.ops, MAX_STATEMENTS_PER_COMMAND);
    for (const [_id, written] of conversationPlan.writes) conversationsWritten.set(_id, written);
    await insertInOrder(messages.collection, inserts, (from) =>
      write(messages.collection, insertFallbacks.slice(from).flat() as mongo.AnyBulkWriteOperation[]),
    );
    await write(messages.collection, messageOps as mongo.AnyBulkWriteOperation[]);
    await insertAbsent(deliveries.collection, [...grouped.deliveryDocs.values()]);
    await write(
      connection.collection<{ _id: string }>(ACTIONS_COLLECTION) as unknown as mongo.Collection,
      [...grouped.actionDocs.values()].map(({ _id, ...fields }) => ({
        replaceOne: { filter: { _id }, replacement: fields, upsert: true },
      })) as unknown as mongo.AnyBulkWriteOperation[],
    );
  };
}
