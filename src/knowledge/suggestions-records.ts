/**
 * A suggestion's records in MongoDB, by `_id` only: the suggestion in `knowledge_suggestions`
 * (one per hand-off: `sug_<hash of its id>`, a unique insert) and its one decision in
 * `knowledge_suggestion_decisions` (a unique insert: a conditional update is not atomic on
 * FerretDB 1.x).
 */
import { createHash } from 'node:crypto';
import type { Connection, mongo } from 'mongoose';
import { isDuplicateKeyError } from '../errors/index.js';

export const SUGGESTION_STATUSES = ['drafting', 'pending', 'nothing', 'failed', 'approved', 'dismissed'] as const;
export type SuggestionStatus = (typeof SUGGESTION_STATUSES)[number];

export interface SuggestionRecord {
  /** `sug_<16 hex of the hand-off id's hash>` */
  _id: string;
  handoffId: string;
  channel: string;
  /** drafting → pending (a draft) | nothing (no reusable answer) | failed (no model answered) → approved | dismissed */
  status: SuggestionStatus;
  question?: string | undefined;
  answer?: string | undefined;
  /** The exchange it was drafted from, personal data out (what the owner reviews). */
  exchange: string;
  faqId?: string | undefined;
  error?: string | undefined;
  createdAt: Date;
  updatedAt: Date;
  decidedAt?: Date | undefined;
}

interface DecisionRecord {
  _id: string;
  decision: string;
  at: Date;
}

export const suggestionIdOf = (handoffId: string) => `sug_${createHash('sha256').update(handoffId).digest('hex').slice(0, 16)}`;

/** Runs a unique insert: false when the `_id` was already there. */
async function insertOnce(insert: () => Promise<unknown>): Promise<boolean> {
  try {
    await insert();
    return true;
  } catch (error) {
    if (isDuplicateKeyError(error)) return false;
    throw error;
  }
}

export function createSuggestionRecords(connection: Connection) {
  const records = () => connection.collection<SuggestionRecord>('knowledge_suggestions') as unknown as mongo.Collection<SuggestionRecord>;
  const decisions = () => connection.collection<DecisionRecord>('knowledge_suggestion_decisions') as unknown as mongo.Collection<DecisionRecord>;

  return {
    get: async (id: string) => (await records().findOne({ _id: id })) ?? undefined,

    update: (id: string, fields: Partial<SuggestionRecord>) => records().updateOne({ _id: id }, { $set: { ...fields, updatedAt: new Date() } }),

    /** Inserts a new suggestion: false when this hand-off's exists (a retried end entry). */
    create: (record: SuggestionRecord) => insertOnce(() => records().insertOne(record)),

    /** Takes the decision once: false when it was already taken. */
    decide: (id: string, decision: 'approved' | 'dismissed') => insertOnce(() => decisions().insertOne({ _id: id, decision, at: new Date() })),

    /** Newest first; `statuses` filters (the operator's listing, a scan: never near a turn). */
    async list(statuses: readonly SuggestionStatus[]): Promise<SuggestionRecord[]> {
      const all = await records().find({}).toArray();
      return all.filter((record) => statuses.includes(record.status)).sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
    },
  };
}
export type SuggestionRecords = ReturnType<typeof createSuggestionRecords>;
