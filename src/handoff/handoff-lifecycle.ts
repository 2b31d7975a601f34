/**
 * The takeover lifecycle on a hand-off record: `open → taken (by whom, when) → handed_back |
 * closed` (an open one may be closed too). Each transition passes a gate first — the insert of
 * `<hand-off>|taken` or `<hand-off>|ended`, unique by `_id` — so of two teammates racing exactly
 * one wins on MongoDB and FerretDB alike (FerretDB 1.x runs two conditional findAndModify calls
 * concurrently, and both may match). The conversation holder document keeps two teams'
 * hand-offs of one conversation from being taken at once.
 */
import { isDuplicateKeyError as isDuplicateKey } from '../errors/index.js';
import type { Actor, ConversationHolder, HandoffModels, HandoffRecord, TransitionGate, HandoffStore } from './handoff-records.js';

export function createHandoffLifecycle(models: HandoffModels, now: () => number): Pick<HandoffStore, 'take' | 'handBack' | 'close'> {
  const { handoffs, pointers, holders, refs, gates } = models;

  const releaseConversation = async (handoff: HandoffRecord) => {
    await Promise.all([
      holders.deleteOne({ _id: handoff.conversationId, handoffId: handoff._id }).exec(),
      // A new request to this team notifies again.
      pointers.deleteOne({ _id: `${handoff.team}|${handoff.conversationId}`, handoffId: handoff._id }).exec(),
      handoff.shortCode
        ? refs.updateOne({ _id: `code:${handoff.shortCode}`, handoffId: handoff._id }, { $set: { releasedAt: new Date(now()) } }).exec()
        : undefined,
    ]);
  };

  /** Inserts a gate; false when it exists (another caller passed it first). */
  const passGate = async (gate: Omit<TransitionGate, 'createdAt'>): Promise<boolean> => {
    try {
      await gates.create(gate);
      return true;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      return false;
    }
  };

  /** Holds the conversation for `handoffId` unless another live hand-off holds it; that one otherwise. */
  const holdConversation = async (conversationId: string, handoffId: string): Promise<HandoffRecord | undefined> => {
    for (let attempt = 0; attempt < 3; attempt += 1) {
      try {
        await holders.create({ _id: conversationId, handoffId });
        return undefined;
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
      const holder = await holders.findById(conversationId).lean<ConversationHolder>().exec();
      if (!holder || holder.handoffId === handoffId) return undefined;
      const other = holder.handoffId ? await handoffs.findById(holder.handoffId).lean<HandoffRecord>().exec() : null;
      if (other && (other.status === 'open' || other.status === 'taken')) return other;
      // Left by a hand-off that ended (a crash between its end and the release): free it.
      await holders.deleteOne({ _id: conversationId, handoffId: holder.handoffId }).exec();
    }
    throw new Error(`conversation ${conversationId} is being taken by several hand-offs at once`);
  };

  /** Writes an ended gate's outcome onto the record (idempotent) and releases what the hand-off held. */
  const applyEnd = async (gate: TransitionGate): Promise<HandoffRecord | undefined> => {
    const ended = await handoffs
      .findOneAndUpdate(
        { _id: gate.handoffId },
        { $set: { status: gate.status, endedBy: gate.actor, endedAt: gate.createdAt, endReason: gate.reason } },
        { returnDocument: 'after' },
      )
      .lean<HandoffRecord>()
      .exec();
    if (ended) await releaseConversation(ended);
    return ended ?? undefined;
  };

  /** Ends a hand-off once: the first to pass its `ended` gate decides how. */
  const end = async (current: HandoffRecord, by: Actor, status: 'handed_back' | 'closed', reason: string) => {
    const passed = await passGate({ _id: `${current._id}|ended`, handoffId: current._id, actor: by, status, reason });
    if (!passed) return undefined;
    const gate = await gates.findById(`${current._id}|ended`).lean<TransitionGate>().exec();
    return gate ? applyEnd(gate) : undefined;
  };

  return {
    async take(handoffId, actor) {
      const current = await handoffs.findById(handoffId).lean<HandoffRecord>().exec();
      if (!current) return { taken: false, handoff: undefined };
      if (current.status !== 'open' && current.status !== 'taken') return { taken: false, handoff: current };
      // Taken already (the holder's next message, or someone too late): no gate to try.
      if (current.status === 'taken') return { taken: false, handoff: current, ...(current.takenBy ? { holder: current.takenBy } : {}) };
      const heldBy = await holdConversation(current.conversationId, handoffId);
      if (heldBy) return { taken: false, handoff: current, heldBy, ...(heldBy.takenBy ? { holder: heldBy.takenBy } : {}) };
      // The gate: one insert per hand-off, so of two racing exactly one passes (a conditional
      // update is not atomic on every server: FerretDB 1.x lets two findAndModify both match).
      const at = new Date(now());
      if (!(await passGate({ _id: `${handoffId}|taken`, handoffId, actor, status: 'taken' }))) {
        const gate = await gates.findById(`${handoffId}|taken`).lean<TransitionGate>().exec();
        const after = (await handoffs.findById(handoffId).lean<HandoffRecord>().exec()) ?? current;
        return { taken: false, handoff: after, ...(gate ? { holder: gate.actor } : {}) };
      }
      await handoffs.updateOne({ _id: handoffId, status: 'open' }, { $set: { status: 'taken', takenBy: actor, takenAt: at } }).exec();
      // Ended meanwhile (closed while this take ran): the end wins, whatever order the writes landed in.
      const ended = await gates.findById(`${handoffId}|ended`).lean<TransitionGate>().exec();
      if (ended) return { taken: false, handoff: await applyEnd(ended) };
      return { taken: true, handoff: (await handoffs.findById(handoffId).lean<HandoffRecord>().exec()) ?? undefined };
    },

    async handBack(handoffId, by, reason, holderId) {
      const current = await handoffs.findById(handoffId).lean<HandoffRecord>().exec();
      if (!current || current.status !== 'taken' || (holderId && current.takenBy?.id !== holderId)) return undefined;
      return end(current, by, 'handed_back', reason);
    },

    async close(handoffId, by, reason) {
      const current = await handoffs.findById(handoffId).lean<HandoffRecord>().exec();
      if (!current || (current.status !== 'open' && current.status !== 'taken')) return undefined;
      const ended = await end(current, by, 'closed', reason);
      if (!ended) return undefined;
      // Taken by a take still writing its status counts as taken.
      const taken = current.status === 'taken' || (await gates.exists({ _id: `${handoffId}|taken` }).exec()) !== null;
      return { ...current, ...(taken ? { status: 'taken' as const, takenBy: ended.takenBy ?? current.takenBy } : {}) };
    },
  };
}
