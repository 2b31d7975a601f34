/**
 * Hand-offs in MongoDB (documents and types: `handoff-records.ts`): the record (team, reason,
 * customer, contact, facts, conversation, status), one notice document per destination (the notice ledger: pending → sending → sent
 * once, or failed), and an "open hand-off" pointer per conversation and team so a second
 * request while one is open is added to it instead of notifying again. All by `_id`.
 *
 * The takeover lifecycle lives on the record: `open → taken (by whom, when) → handed_back |
 * closed` (an open one may be closed too). Each transition passes a gate first — the insert of
 * `<hand-off>|taken` or `<hand-off>|ended`, unique by `_id` — so of two teammates racing exactly
 * one wins on MongoDB and FerretDB alike (FerretDB 1.x runs two conditional findAndModify calls
 * concurrently, and both may match). A conversation holder document (`_id` = conversation,
 * inserted on take, deleted on end) keeps two teams' hand-offs of one conversation from being
 * taken at once (`handoff-lifecycle.ts`). References (`_id` = a notice's or relay's Twilio SID,
 * or `code:<short code>`) lead a teammate's reply back to its hand-off. Opening (and joining an
 * open one): `handoff-opening.ts`; the notice ledger: `notice-ledger.ts`.
 */
import type { Connection } from 'mongoose';
import { handoffModels, noticeId, type HandoffRecord, type HandoffRef, type HandoffStore, type NoticeRecord } from './handoff-records.js';
import { createHandoffLifecycle } from './handoff-lifecycle.js';
import { createHandoffOpening } from './handoff-opening.js';
import { createNoticeLedger } from './notice-ledger.js';

export { HANDOFF_STATUSES, noticeId } from './handoff-records.js';
export type { Actor, HandoffAction, HandoffRecord, HandoffRequest, HandoffStatus, HandoffStore, NoticeRecord } from './handoff-records.js';

export function createHandoffStore(connection: Connection, now: () => number = Date.now): HandoffStore {
  const models = handoffModels(connection);
  const { handoffs, notices, pointers, holders, refs, gates } = models;
  return {
    ...createHandoffOpening(models, now),
    ...createHandoffLifecycle(models, now),
    ...createNoticeLedger(models, now),

    async ensureIndexes() {
      await Promise.all([
        handoffs.createIndexes(),
        notices.createIndexes(),
        pointers.createIndexes(),
        holders.createIndexes(),
        refs.createIndexes(),
        gates.createIndexes(),
      ]);
    },

    async get(handoffId) {
      return (await handoffs.findById(handoffId).lean<HandoffRecord>().exec()) ?? undefined;
    },

    async resolveRef(ref) {
      const id = 'sid' in ref ? ref.sid : `code:${ref.code}`;
      const found = await refs.findById(id).lean<HandoffRef>().exec();
      return found && !found.releasedAt ? found.handoffId : undefined;
    },

    async recordRef(sid, handoffId) {
      await refs.updateOne({ _id: sid }, { $setOnInsert: { handoffId, createdAt: new Date(now()) } }, { upsert: true }).exec();
    },

    async purgeOlderThan(cutoff) {
      const [removed] = await Promise.all([
        handoffs.deleteMany({ createdAt: { $lt: cutoff } }).exec(),
        notices.deleteMany({ createdAt: { $lt: cutoff } }).exec(),
        pointers.deleteMany({ openedAt: { $lt: cutoff } }).exec(),
        refs.deleteMany({ createdAt: { $lt: cutoff } }).exec(),
        gates.deleteMany({ createdAt: { $lt: cutoff } }).exec(),
        // The team messages' ledger (team-messages.ts) goes with its hand-offs.
        connection.collection('teammessages').deleteMany({ createdAt: { $lt: cutoff } }),
      ]);
      return removed.deletedCount;
    },

    async list({ status, limit }) {
      const found = await handoffs
        .find(status ? { status } : {})
        .sort({ createdAt: -1 })
        .limit(limit)
        .lean<HandoffRecord[]>()
        .exec();
      return Promise.all(
        found.map(async (handoff) => ({
          ...handoff,
          notices: await Promise.all(
            handoff.destinations.map((destination) => notices.findById(noticeId(handoff._id, destination.id)).lean<NoticeRecord>().exec()),
          ).then((all) => all.filter((notice): notice is NoticeRecord => notice !== null)),
        })),
      );
    },
  };
}
