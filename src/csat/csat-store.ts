/**
 * Satisfaction answers in MongoDB, collection `csat`: one document per question asked, `_id`
 * `<conversation key>|<asked at, ms since the epoch>`, written only by `_id` (an upsert: the
 * question's fields on insert, the answer's on top; one that lost the race for a new `_id` runs
 * once more), so a write that finds MongoDB down is retried by the next one and a report reads
 * them by `_id` or by `askedAt` (indexed).
 *
 * Shape: `{ _id, conversationId, channel, roleId, withPerson, trigger: 'handed_back' | 'quiet',
 * handoffId?, language, askedAt, score?: 1..5, answeredVia?: 'tap' | 'typed', answeredAt?,
 * comment?, commentedAt? }`.
 */
import type { Connection } from 'mongoose';
import { isDuplicateKeyError } from '../errors/index.js';
import type { PendingQuestion } from './csat-state.js';

const CSAT_COLLECTION = 'csat';

/** The most answers a conversation's page shows, the newest (at most one per CSAT_COOLDOWN_HOURS). */
const ANSWERS_SHOWN = 100;
/** The longest comment kept (the rest is cut). */
const COMMENT_CHARS = 1000;

export interface CsatRecord {
  _id: string;
  conversationId: string;
  channel: string;
  roleId: string;
  /** A person (a teammate) took part in the conversation: the question followed their hand-back. */
  withPerson: boolean;
  trigger: 'handed_back' | 'quiet';
  handoffId?: string;
  language: string;
  askedAt: Date;
  score?: number;
  answeredVia?: 'tap' | 'typed';
  answeredAt?: Date;
  comment?: string;
  commentedAt?: Date;
}

export const csatRecordId = (conversationKey: string, askedAt: number) => `${conversationKey}|${askedAt}`;

function questionFields(conversationKey: string, pending: PendingQuestion): Omit<CsatRecord, '_id'> {
  return {
    conversationId: conversationKey,
    channel: pending.channel,
    roleId: pending.roleId,
    withPerson: pending.withPerson,
    trigger: pending.trigger,
    ...(pending.handoffId ? { handoffId: pending.handoffId } : {}),
    language: pending.language,
    askedAt: new Date(pending.askedAt),
  };
}

function ratingOf(rated: PendingQuestion): Partial<CsatRecord> {
  if (rated.score === undefined) return {};
  return {
    score: rated.score,
    ...(rated.answeredVia ? { answeredVia: rated.answeredVia } : {}),
    ...(rated.answeredAt ? { answeredAt: new Date(rated.answeredAt) } : {}),
  };
}

export function createCsatStore(connection: Connection) {
  const collection = () => connection.collection<CsatRecord>(CSAT_COLLECTION);
  const upsert = async (conversationKey: string, pending: PendingQuestion, answer: Partial<CsatRecord>) => {
    const { askedAt, ...rest } = questionFields(conversationKey, pending);
    const write = () =>
      collection().updateOne(
        { _id: pending.id },
        { $setOnInsert: { askedAt, ...rest }, ...(Object.keys(answer).length ? { $set: answer } : {}) },
        { upsert: true },
      );
    // A rating tapped while the question's own record is still being written races it for the new
    // `_id`: the loser fails with a duplicate key (FerretDB never retries it). Run again, it updates.
    await write().catch((error: unknown) => {
      if (!isDuplicateKeyError(error)) throw error;
      return write();
    });
  };
  return {
    async ensureIndexes(): Promise<void> {
      await collection().createIndex({ askedAt: 1 });
    },
    asked: (conversationKey: string, pending: PendingQuestion) => upsert(conversationKey, pending, {}),
    /** The rating the question carries (`score`, `answeredVia`, `answeredAt`). */
    answered: (conversationKey: string, rated: PendingQuestion) => upsert(conversationKey, rated, ratingOf(rated)),
    /** The comment, with the rating again (it heals a rating write that failed). */
    commented: (conversationKey: string, rated: PendingQuestion, comment: string, at: number) =>
      upsert(conversationKey, rated, { ...ratingOf(rated), comment: comment.slice(0, COMMENT_CHARS), commentedAt: new Date(at) }),
    get: async (id: string) => (await collection().findOne({ _id: id })) ?? undefined,
    /** The conversation's answered questions, oldest first: a range of `_id` (its key, `|`, when asked). */
    answersOf: async (conversationKey: string) => {
      const newest = await collection()
        .find({ _id: { $gt: `${conversationKey}|`, $lt: `${conversationKey}}` }, conversationId: conversationKey, score: { $gte: 1 } })
        .sort({ _id: -1 })
        .limit(ANSWERS_SHOWN)
        .toArray();
      return newest.reverse();
    },
  };
}
export type CsatStore = ReturnType<typeof createCsatStore>;
