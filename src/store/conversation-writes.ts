/**
 * A batch's conversation records as the transcript writer writes them: folded into one upsert
 * per conversation (inserted as the first record, `updatedAt` their latest), named by the newest
 * record's name. A name is set only over an older one: the document keeps `displayNameAt`, the
 * time of the record its name came from, and a rename applies only where that is not newer
 * (records arrive out of order when a dead writer's entry is taken over late, or two writers
 * hold a conversation's entries). The upsert carries that condition in its filter, by `_id`
 * (FerretDB pushes nothing else down), so the usual write is one statement; when it matches
 * nothing because the document holds a newer name (or another writer created it meanwhile), the
 * insert it falls to fails as a duplicate key, and that conversation is written again as two
 * statements: the upsert without a name, then the rename under the same condition.
 *
 * The condition is checked and applied in one update statement; FerretDB 1.x does not make a
 * conditional update atomic, so two writers renaming one conversation at the same instant could
 * still leave the older name — both would have to hold its entries at once (a taken-over batch
 * racing its new owner), and the next rename corrects it.
 */
import mongoose, { type mongo } from 'mongoose';
import type { TranscriptRecord } from './outbox.js';
import type { ConversationRecord } from './transcript-store.js';

/** MongoDB's (and FerretDB's) duplicate key error. */
const DUPLICATE_KEY = 11000;

/** A conversation document's fields this writer sets itself: a newer record's field of the same name is not set over them. */
const CONVERSATION_OWN_FIELDS: ReadonlySet<string> = new Set(['_id', 'channel', 'address', 'displayName', 'displayNameAt', 'recent', 'createdAt', 'updatedAt']);

/**
 * A conversation's records in one batch: inserted as the first, named as the newest with a name,
 * `updatedAt` their latest; `changed` when one of them is news (a name new in Redis, or fields a
 * newer version added), which is always written.
 */
export interface ConversationFold {
  insert: Record<string, unknown>;
  updatedAt: Date;
  displayName?: string;
  /** The time of the record `displayName` came from. */
  displayNameAt?: Date;
  changed: boolean;
  extra: Record<string, unknown>;
}

/** Folds one conversation record into the batch's folds. */
export function foldConversation(folds: Map<string, ConversationFold>, record: Extract<TranscriptRecord, { kind: 'conversation' }>): void {
  const { kind: _kind, _id, channel, address, displayName, nameChanged, at: recordAt, ...added } = record;
  // Fields a newer version added are set (never over what this version writes itself).
  const extra = Object.fromEntries(Object.entries(added).filter(([field]) => !CONVERSATION_OWN_FIELDS.has(field)));
  const changed = nameChanged === true || Object.keys(extra).length > 0;
  const at = new Date(recordAt);
  const fold = folds.get(_id);
  if (!fold) {
    folds.set(_id, {
      insert: { channel, address, recent: [], createdAt: at },
      updatedAt: at,
      ...(displayName ? { displayName, displayNameAt: at } : {}),
      changed,
      extra,
    });
    return;
  }
  if (fold.updatedAt < at) fold.updatedAt = at;
  // The newest record's name, whatever order the batch holds them in (a tie: the later record).
  if (displayName && (!fold.displayNameAt || fold.displayNameAt <= at)) {
    fold.displayName = displayName;
    fold.displayNameAt = at;
  }
  fold.changed ||= changed;
  Object.assign(fold.extra, extra);
}

type ConversationOp = mongo.AnyBulkWriteOperation<ConversationRecord>;

/** One conversation's write, and what replaces it when its filter matched nothing and its insert found the document there. */
export interface ConversationWrite {
  op: ConversationOp;
  fallback?: ConversationOp[];
}

/** The write of a folded conversation (`updatedAt`: the fold's, or a later inbound message's). */
export function conversationWrite(_id: string, fold: ConversationFold, updatedAt: Date): ConversationWrite {
  const upsert = (set: Record<string, unknown>, filter: Record<string, unknown>): ConversationOp => ({
    updateOne: {
      filter: { _id, ...filter },
      update: { $setOnInsert: fold.insert, $max: { updatedAt }, ...(Object.keys(set).length > 0 ? { $set: set } : {}) },
      upsert: true,
    },
  });
  if (!fold.displayName || !fold.displayNameAt) return { op: upsert(fold.extra, {}) };
  const name = { displayName: fold.displayName, displayNameAt: fold.displayNameAt };
  // Unnamed, named before names carried their time, or named by an older (or the same) record.
  const olderName = { $or: [{ displayNameAt: { $exists: false } }, { displayNameAt: { $lte: fold.displayNameAt } }] };
  return {
    op: upsert({ ...fold.extra, ...name }, olderName),
    fallback: [upsert(fold.extra, {}), { updateOne: { filter: { _id, ...olderName }, update: { $set: name } } }],
  };
}

/** The index (in the command) of the write a duplicate key stopped, or undefined for any other failure. */
function duplicateAt(error: unknown): number | undefined {
  if (!(error instanceof mongoose.mongo.MongoBulkWriteError)) return undefined;
  const failures = [error.writeErrors].flat();
  return failures.length === 1 && failures[0]?.code === DUPLICATE_KEY ? failures[0].index : undefined;
}

/**
 * Writes the conversations in ordered commands of `perCommand`: a write stopped by a duplicate
 * key (its rename found a newer name, or the document was created meanwhile) is replaced by its
 * fallback, and the command goes on after it. Any other failure is thrown (the batch is retried).
 */
export async function writeConversations(collection: mongo.Collection, writes: readonly ConversationWrite[], perCommand: number): Promise<void> {
  let start = 0;
  while (start < writes.length) {
    const command = writes.slice(start, start + perCommand);
    try {
      await collection.bulkWrite(command.map((write) => write.op) as mongo.AnyBulkWriteOperation[], { ordered: true });
      start += command.length;
    } catch (error) {
      const index = duplicateAt(error);
      const fallback = index === undefined ? undefined : command[index]?.fallback;
      if (index === undefined || !fallback) throw error;
      await collection.bulkWrite(fallback as mongo.AnyBulkWriteOperation[], { ordered: true });
      start += index + 1;
    }
  }
}
