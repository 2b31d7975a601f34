/**
 * Hand-offs in MongoDB: the record (team, reason, customer, contact, facts, conversation,
 * status), one notice document per destination (the notice ledger: pending → sending → sent
 * once, or failed), and an "open hand-off" pointer per conversation and team so a second
 * request while one is open is added to it instead of notifying again. All by `_id`.
 *
 * The takeover lifecycle lives on the record: `open → taken (by whom, when) → handed_back |
 * closed` (an open one may be closed too). Each transition passes a gate first — the insert of
 * `<hand-off>|taken` or `<hand-off>|ended`, unique by `_id` — so of two teammates racing exactly
 * one wins on MongoDB and FerretDB alike (FerretDB 1.x runs two conditional findAndModify calls
 * concurrently, and both may match). A conversation holder document (`_id` = conversation,
 * inserted on take, deleted on end) keeps two teams' hand-offs of one conversation from being
 * taken at once. References
 * (`_id` = a notice's or relay's Twilio SID, or `code:<short code>`) lead a teammate's reply
 * back to its hand-off.
 */
import { randomInt, randomUUID } from 'node:crypto';
import { Schema, type Connection, type Model } from 'mongoose';
import { isDuplicateKeyError as isDuplicateKey } from '../errors/index.js';
import type { Facts } from '../contracts/index.js';
import type { Destination, TeamId } from './teams.js';

/** An open hand-off older than this no longer absorbs new requests: a new one notifies again. */
const HANDOFF_REOPEN_AFTER_MS = 24 * 60 * 60 * 1000;

export type NoticeStatus = 'pending' | 'sending' | 'sent' | 'failed' | 'uncertain';

export const HANDOFF_STATUSES = ['open', 'taken', 'handed_back', 'closed'] as const;
export type HandoffStatus = (typeof HANDOFF_STATUSES)[number];

/** Who acted on a hand-off: a team member (by WhatsApp or the transcript page), an operator, or the service itself. */
export interface Actor {
  /** Stable: `whatsapp:+…` for a team member, `admin:<name>`, `page:<name>`, `system:idle`. */
  id: string;
  name: string;
  via: 'whatsapp' | 'page' | 'admin' | 'system';
  /** Where relays reach them, when they have a WhatsApp number. */
  whatsapp?: string;
}

/** A short code lives this long after its hand-off ended before another hand-off may get it. */
const CODE_QUARANTINE_MS = 14 * 24 * 60 * 60 * 1000;

export interface HandoffRecord {
  _id: string;
  team: TeamId;
  status: HandoffStatus;
  reason: string;
  /** What a teammate types (`#4821 text`) where their client can't reply to the notice. */
  shortCode?: string;
  takenBy?: Actor;
  takenAt?: Date;
  /** Who handed it back or closed it, when and why (`teammate`, `idle`, `admin`, `page`). */
  endedBy?: Actor;
  endedAt?: Date;
  endReason?: string;
  requests: { reason: string; at: Date }[];
  channel: string;
  conversationId: string;
  roleId: string;
  customer: { address: string; name?: string };
  contact: { email?: string; phone?: string; whatsapp?: string };
  facts: Facts;
  /** The conversation's last messages when the hand-off was opened (what the notice shows). */
  lastMessages: { direction: 'inbound' | 'outbound'; text: string }[];
  /** Changes waiting for a teammate to run or decline them (confirmed actions only a person may run). */
  actions?: HandoffAction[];
  destinations: Destination[];
  createdAt: Date;
  updatedAt: Date;
}

/** A change the hand-off carries: the action's id and what the service summarised of it. */
export interface HandoffAction {
  id: string;
  title: string;
  summary: string;
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

interface ConversationHolder {
  /** The conversation id. */
  _id: string;
  /** The hand-off that holds the conversation (deleted when it ends). */
  handoffId: string;
}

/** One transition of a hand-off, passed once (`_id` = `<hand-off>|taken` or `<hand-off>|ended`). */
interface TransitionGate {
  _id: string;
  handoffId: string;
  actor: Actor;
  status: 'taken' | 'handed_back' | 'closed';
  reason?: string;
  createdAt: Date;
}

interface HandoffRef {
  /** A Twilio SID of a notice or relay, or `code:<short code>`. */
  _id: string;
  handoffId: string;
  /** Short codes: when their hand-off ended (the code is reusable after a quarantine). */
  releasedAt?: Date | null;
  createdAt: Date;
}

interface OpenPointer {
  _id: string;
  handoffId: string;
  openedAt: Date;
}

const actorSchema = new Schema<Actor>({ id: String, name: String, via: String, whatsapp: String }, { _id: false });

const handoffSchema = new Schema<HandoffRecord>(
  {
    _id: { type: String, required: true },
    team: { type: String, required: true },
    status: { type: String, required: true },
    reason: { type: String, required: true },
    shortCode: String,
    takenBy: { type: actorSchema, default: undefined },
    takenAt: Date,
    endedBy: { type: actorSchema, default: undefined },
    endedAt: Date,
    endReason: String,
    requests: [{ _id: false, reason: String, at: Date }],
    channel: { type: String, required: true },
    conversationId: { type: String, required: true },
    roleId: { type: String, required: true },
    customer: { address: { type: String, required: true }, name: String },
    contact: { email: String, phone: String, whatsapp: String },
    facts: { type: Schema.Types.Mixed, default: {} },
    lastMessages: [{ _id: false, direction: String, text: String }],
    actions: { type: [{ _id: false, id: String, title: String, summary: String }], default: undefined },
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

const holderSchema = new Schema<ConversationHolder>(
  { _id: { type: String, required: true }, handoffId: { type: String, default: null } },
  { versionKey: false },
);

const gateSchema = new Schema<TransitionGate>(
  {
    _id: { type: String, required: true },
    handoffId: { type: String, required: true },
    actor: { type: actorSchema, required: true },
    status: { type: String, required: true },
    reason: String,
  },
  { versionKey: false, timestamps: { createdAt: true, updatedAt: false } },
);
gateSchema.index({ createdAt: 1 });

const refSchema = new Schema<HandoffRef>(
  { _id: { type: String, required: true }, handoffId: { type: String, required: true }, releasedAt: Date },
  { versionKey: false, timestamps: { createdAt: true, updatedAt: false } },
);
refSchema.index({ createdAt: 1 });

const pointerSchema = new Schema<OpenPointer>(
  { _id: { type: String, required: true }, handoffId: { type: String, required: true }, openedAt: { type: Date, required: true } },
  { versionKey: false },
);

export const noticeId = (handoffId: string, destinationId: string) => `${handoffId}|${destinationId}`;

/** What opening a hand-off takes: the record's fields a request decides. */
export type HandoffRequest = Pick<
  HandoffRecord,
  'team' | 'reason' | 'channel' | 'conversationId' | 'roleId' | 'customer' | 'contact' | 'facts' | 'lastMessages' | 'destinations' | 'actions'
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
  list(options: { status?: HandoffStatus; limit: number }): Promise<(HandoffRecord & { notices: NoticeRecord[] })[]>;
  /**
   * `open → taken` by `actor`, if the conversation is not held by another hand-off: of two
   * racing, exactly one wins. Returns the record after the attempt, whether this call took it,
   * and who holds it otherwise (`heldBy`: another hand-off of the conversation holds it).
   */
  take(handoffId: string, actor: Actor): Promise<{ taken: boolean; handoff: HandoffRecord | undefined; holder?: Actor; heldBy?: HandoffRecord }>;
  /** `taken → handed_back` (only by `holderId` when given); the record after, or undefined when it did not apply. */
  handBack(handoffId: string, by: Actor, reason: string, holderId?: string): Promise<HandoffRecord | undefined>;
  /** `open | taken → closed`; the record as it was before, or undefined when it was not open or taken. */
  close(handoffId: string, by: Actor, reason: string): Promise<HandoffRecord | undefined>;
  /** The hand-off a SID (of a notice or relay) or a short code leads to. */
  resolveRef(ref: { sid: string } | { code: string }): Promise<string | undefined>;
  /** Remembers that a message sent to a teammate (a notice, a relay) belongs to a hand-off. */
  recordRef(sid: string, handoffId: string): Promise<void>;
  /** The hand-offs of a conversation still open or taken, one per team at most (by `_id`). */
  activeFor(conversationId: string): Promise<HandoffRecord[]>;
}

function model<T>(connection: Connection, name: string, schema: Schema<T>): Model<T> {
  return (connection.models[name] as Model<T> | undefined) ?? connection.model<T>(name, schema);
}

export function createHandoffStore(connection: Connection, now: () => number = Date.now): HandoffStore {
  const handoffs = model(connection, 'Handoff', handoffSchema);
  const notices = model(connection, 'HandoffNotice', noticeSchema);
  const pointers = model(connection, 'OpenHandoff', pointerSchema);
  const holders = model(connection, 'ConversationHolder', holderSchema);
  const refs = model(connection, 'HandoffRef', refSchema);
  const gates = model(connection, 'HandoffTransition', gateSchema);

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

    async resolveRef(ref) {
      const id = 'sid' in ref ? ref.sid : `code:${ref.code}`;
      const found = await refs.findById(id).lean<HandoffRef>().exec();
      return found && !found.releasedAt ? found.handoffId : undefined;
    },

    async recordRef(sid, handoffId) {
      await refs.updateOne({ _id: sid }, { $setOnInsert: { handoffId, createdAt: new Date(now()) } }, { upsert: true }).exec();
    },

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
