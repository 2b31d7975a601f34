/**
 * Hand-offs in MongoDB: the record (team, reason, customer, contact, facts, conversation,
 * status), one notice document per destination (the notice ledger: pending → sending → sent
 * once, or failed), and an "open hand-off" pointer per conversation and team so a second
 * request while one is open is added to it instead of notifying again. All by `_id`.
 */
import { randomUUID } from 'node:crypto';
import { Schema, type Connection, type Model } from 'mongoose';
import { isDuplicateKeyError as isDuplicateKey } from '../errors/index.js';
import type { Facts } from '../contracts/index.js';
import type { Destination, TeamId } from './teams.js';

/** An open hand-off older than this no longer absorbs new requests: a new one notifies again. */
const HANDOFF_REOPEN_AFTER_MS = 24 * 60 * 60 * 1000;

export type NoticeStatus = 'pending' | 'sending' | 'sent' | 'failed' | 'uncertain';

export interface HandoffRecord {
  _id: string;
  team: TeamId;
  status: 'open' | 'closed';
  reason: string;
  requests: { reason: string; at: Date }[];
  channel: string;
  conversationId: string;
  roleId: string;
  customer: { address: string; name?: string };
  contact: { email?: string; phone?: string; whatsapp?: string };
  facts: Facts;
  /** The conversation's last messages when the hand-off was opened (what the notice shows). */
  lastMessages: { direction: 'inbound' | 'outbound'; text: string }[];
  destinations: Destination[];
  createdAt: Date;
  updatedAt: Date;
}

export interface NoticeRecord {
  /** `<handoff id>|<destination id>` */
  _id: string;
  handoffId: string;
  destination: Destination;
  status: NoticeStatus;
  attempts: number;
  lastError?: string;
  channelMessageId?: string;
  /** When the notice was last claimed for sending: where to look for it if the outcome was lost. */
  claimedAt?: Date;
  sentAt?: Date;
  createdAt: Date;
  updatedAt: Date;
}

interface OpenPointer {
  _id: string;
  handoffId: string;
  openedAt: Date;
}

const handoffSchema = new Schema<HandoffRecord>(
  {
    _id: { type: String, required: true },
    team: { type: String, required: true },
    status: { type: String, required: true },
    reason: { type: String, required: true },
    requests: [{ _id: false, reason: String, at: Date }],
    channel: { type: String, required: true },
    conversationId: { type: String, required: true },
    roleId: { type: String, required: true },
    customer: { address: { type: String, required: true }, name: String },
    contact: { email: String, phone: String, whatsapp: String },
    facts: { type: Schema.Types.Mixed, default: {} },
    lastMessages: [{ _id: false, direction: String, text: String }],
    destinations: [{ _id: false, id: String, kind: String, target: String }],
  },
  { timestamps: true, versionKey: false, minimize: false },
);
handoffSchema.index({ createdAt: -1 });

const noticeSchema = new Schema<NoticeRecord>(
  {
    _id: { type: String, required: true },
    handoffId: { type: String, required: true },
    destination: { id: String, kind: String, target: String },
    status: { type: String, required: true },
    attempts: { type: Number, default: 0 },
    lastError: String,
    channelMessageId: String,
    claimedAt: Date,
    sentAt: Date,
  },
  { timestamps: true, versionKey: false },
);
noticeSchema.index({ handoffId: 1 });

const pointerSchema = new Schema<OpenPointer>(
  { _id: { type: String, required: true }, handoffId: { type: String, required: true }, openedAt: { type: Date, required: true } },
  { versionKey: false },
);

export const noticeId = (handoffId: string, destinationId: string) => `${handoffId}|${destinationId}`;

/** What opening a hand-off takes: the record's fields a request decides. */
export type HandoffRequest = Pick<
  HandoffRecord,
  'team' | 'reason' | 'channel' | 'conversationId' | 'roleId' | 'customer' | 'contact' | 'facts' | 'lastMessages' | 'destinations'
>;

export interface HandoffStore {
  ensureIndexes(): Promise<void>;
  /** Opens a hand-off, or adds the request to the team's open one (`created: false`: notify nobody). */
  open(request: HandoffRequest): Promise<{ handoff: HandoffRecord; created: boolean }>;
  get(handoffId: string): Promise<HandoffRecord | undefined>;
  notice(handoffId: string, destinationId: string): Promise<NoticeRecord | undefined>;
  /** pending → sending; false when another attempt claimed or finished it. */
  claimNotice(id: string): Promise<boolean>;
  /** Claims again a notice whose earlier send outcome was lost (it was not found sent). */
  reclaimNotice(id: string): Promise<void>;
  markNoticeSent(id: string, channelMessageId: string | undefined): Promise<void>;
  releaseNotice(id: string, error: string): Promise<void>;
  markNoticeFailed(id: string, status: 'failed' | 'uncertain', error: string): Promise<void>;
  /** Deletes hand-offs and their notices created before `cutoff`; returns how many hand-offs. */
  purgeOlderThan(cutoff: Date): Promise<number>;
  /** Recent hand-offs with their notices, newest first (admin API; not a hot path). */
  list(options: { status?: 'open' | 'closed'; limit: number }): Promise<(HandoffRecord & { notices: NoticeRecord[] })[]>;
}

function model<T>(connection: Connection, name: string, schema: Schema<T>): Model<T> {
  return (connection.models[name] as Model<T> | undefined) ?? connection.model<T>(name, schema);
}

export function createHandoffStore(connection: Connection, now: () => number = Date.now): HandoffStore {
  const handoffs = model(connection, 'Handoff', handoffSchema);
  const notices = model(connection, 'HandoffNotice', noticeSchema);
  const pointers = model(connection, 'OpenHandoff', pointerSchema);

  const create = async (request: HandoffRequest): Promise<HandoffRecord> => {
    const id = `ho_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
    const at = new Date(now());
    const handoff = await handoffs.create({
      _id: id,
      status: 'open',
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
    async ensureIndexes() {
      await Promise.all([handoffs.createIndexes(), notices.createIndexes(), pointers.createIndexes()]);
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

    async get(handoffId) {
      return (await handoffs.findById(handoffId).lean<HandoffRecord>().exec()) ?? undefined;
    },

    async notice(handoffId, destinationId) {
      return (await notices.findById(noticeId(handoffId, destinationId)).lean<NoticeRecord>().exec()) ?? undefined;
    },

    async claimNotice(id) {
      const claimed = await notices
        .findOneAndUpdate({ _id: id, status: 'pending' }, { $set: { status: 'sending', claimedAt: new Date(now()) }, $inc: { attempts: 1 } })
        .exec();
      return claimed !== null;
    },

    async reclaimNotice(id) {
      await notices.updateOne({ _id: id }, { $set: { status: 'sending', claimedAt: new Date(now()) }, $inc: { attempts: 1 } }).exec();
    },

    async markNoticeSent(id, channelMessageId) {
      await notices.updateOne({ _id: id }, { $set: { status: 'sent', sentAt: new Date(now()), ...(channelMessageId ? { channelMessageId } : {}) } }).exec();
    },

    async releaseNotice(id, error) {
      await notices.updateOne({ _id: id, status: 'sending' }, { $set: { status: 'pending', lastError: error } }).exec();
    },

    async markNoticeFailed(id, status, error) {
      await notices.updateOne({ _id: id }, { $set: { status, lastError: error } }).exec();
    },

    async purgeOlderThan(cutoff) {
      const [removed] = await Promise.all([
        handoffs.deleteMany({ createdAt: { $lt: cutoff } }).exec(),
        notices.deleteMany({ createdAt: { $lt: cutoff } }).exec(),
        pointers.deleteMany({ openedAt: { $lt: cutoff } }).exec(),
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
