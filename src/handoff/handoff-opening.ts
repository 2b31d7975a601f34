/**
 * Opening a hand-off: a request opens one (with a short code, and a pending notice per
 * destination), or is added to the team's open one for the conversation (its pointer, `_id` =
 * `<team>|<conversation>`), so a second request while one is open notifies nobody again.
 */
import { randomInt, randomUUID } from 'node:crypto';
import { isDuplicateKeyError as isDuplicateKey } from '../errors/index.js';
import { noticeId, type HandoffModels, type HandoffRecord, type HandoffRequest, type OpenPointer, type HandoffStore } from './handoff-records.js';

/** An open hand-off older than this no longer absorbs new requests: a new one notifies again. */
const HANDOFF_REOPEN_AFTER_MS = 24 * 60 * 60 * 1000;

/** A short code lives this long after its hand-off ended before another hand-off may get it. */
const CODE_QUARANTINE_MS = 14 * 24 * 60 * 60 * 1000;

export function createHandoffOpening(models: HandoffModels, now: () => number): Pick<HandoffStore, 'open' | 'activeFor'> {
  const { handoffs, notices, pointers, refs } = models;

  /** A short code no live hand-off has: 4 digits while they last, then longer. */
  const allocateCode = async (handoffId: string): Promise<string> => {
    for (let attempt = 0; attempt < 40; attempt += 1) {
      const digits = 4 + Math.floor(attempt / 10);
      const code = String(randomInt(10 ** (digits - 1), 10 ** digits));
      try {
        await refs.create({ _id: `code:${code}`, handoffId });
        return code;
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
      const reused = await refs
        .findOneAndUpdate(
          { _id: `code:${code}`, releasedAt: { $lt: new Date(now() - CODE_QUARANTINE_MS) } },
          { $set: { handoffId, releasedAt: null, createdAt: new Date(now()) } },
        )
        .exec();
      if (reused) return code;
    }
    throw new Error('no free hand-off short code');
  };

  const create = async (request: HandoffRequest): Promise<HandoffRecord> => {
    const id = `ho_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
    const at = new Date(now());
    const handoff = await handoffs.create({
      _id: id,
      status: 'open',
      shortCode: await allocateCode(id),
      requests: [{ reason: request.reason, at }],
      ...request,
    });
    if (request.destinations.length > 0) {
      await notices.insertMany(
        request.destinations.map((destination) => ({
          _id: noticeId(id, destination.id),
          handoffId: id,
          destination,
          status: 'pending',
          attempts: 0,
        })),
      );
    }
    return handoff.toObject<HandoffRecord>();
  };

  const appendTo = async (handoffId: string, reason: string) => {
    await handoffs.updateOne({ _id: handoffId }, { $push: { requests: { reason, at: new Date(now()) } } }).exec();
    return (await handoffs.findById(handoffId).lean<HandoffRecord>().exec()) ?? undefined;
  };

  return {
    async activeFor(conversationId) {
      const found = await pointers
        .find({ _id: { $in: ['sales', 'support'].map((team) => `${team}|${conversationId}`) } })
        .lean<OpenPointer[]>()
        .exec();
      const records = await Promise.all(
        found
          .filter((pointer) => !pointer.handoffId.startsWith('pending_'))
          .map((pointer) => handoffs.findById(pointer.handoffId).lean<HandoffRecord>().exec()),
      );
      return records.filter((record): record is HandoffRecord => record !== null && (record.status === 'open' || record.status === 'taken'));
    },

    async open(request) {
      const pointerId = `${request.team}|${request.conversationId}`;
      const provisional = `pending_${randomUUID()}`;
      try {
        await pointers.create({ _id: pointerId, handoffId: provisional, openedAt: new Date(now()) });
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
        const pointer = await pointers.findById(pointerId).lean<OpenPointer>().exec();
        const age = pointer ? now() - pointer.openedAt.getTime() : Infinity;
        // A pointer still "pending" after a minute belongs to a request that died mid-open.
        const fresh = pointer && age < (pointer.handoffId.startsWith('pending_') ? 60_000 : HANDOFF_REOPEN_AFTER_MS);
        if (pointer && fresh && !pointer.handoffId.startsWith('pending_')) {
          const existing = await appendTo(pointer.handoffId, request.reason);
          if (existing) return { handoff: existing, created: false };
        }
        if (pointer && fresh) {
          // Another request for this team is opening the hand-off right now: join it.
          return { handoff: await waitForOpen(pointerId, request.reason), created: false };
        }
        // Stale: take the pointer over (only if nobody else did first).
        const taken = await pointers
          .findOneAndUpdate({ _id: pointerId, handoffId: pointer?.handoffId }, { $set: { handoffId: provisional, openedAt: new Date(now()) } })
          .exec();
        if (!taken) return { handoff: await waitForOpen(pointerId, request.reason), created: false };
      }
      const handoff = await create(request);
      await pointers.updateOne({ _id: pointerId }, { $set: { handoffId: handoff._id } }).exec();
      return { handoff, created: true };
    },
  };

  async function waitForOpen(pointerId: string, reason: string): Promise<HandoffRecord> {
    for (let attempt = 0; attempt < 50; attempt += 1) {
      const pointer = await pointers.findById(pointerId).lean<OpenPointer>().exec();
      if (pointer && !pointer.handoffId.startsWith('pending_')) {
        const existing = await appendTo(pointer.handoffId, reason);
        if (existing) return existing;
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error(`hand-off ${pointerId} is still being opened`);
  }
}
