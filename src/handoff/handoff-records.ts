/**
 * The hand-off's documents in MongoDB (all by `_id`): the record, one notice per destination
 * (the notice ledger), the open-hand-off pointer per conversation and team, the conversation
 * holder, the transition gates and the references (SIDs, short codes) that lead a teammate's
 * reply back to its hand-off. `handoffModels` opens them on a connection.
 */
import { Schema, type Connection, type Model } from 'mongoose';
import type { Facts } from '../contracts/index.js';
import type { Destination, TeamId } from './teams.js';

/** `withdrawn`: never sent, its hand-off taken or ended while the notice waited for the team to open. */
export type NoticeStatus = 'pending' | 'sending' | 'sent' | 'failed' | 'uncertain' | 'withdrawn';

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

export interface ConversationHolder {
  /** The conversation id. */
  _id: string;
  /** The hand-off that holds the conversation (deleted when it ends). */
  handoffId: string;
}

/** One transition of a hand-off, passed once (`_id` = `<hand-off>|taken` or `<hand-off>|ended`). */
export interface TransitionGate {
  _id: string;
  handoffId: string;
  actor: Actor;
  status: 'taken' | 'handed_back' | 'closed';
  reason?: string;
  createdAt: Date;
}

export interface HandoffRef {
  /** A Twilio SID of a notice or relay, or `code:<short code>`. */
  _id: string;
  handoffId: string;
  /** Short codes: when their hand-off ended (the code is reusable after a quarantine). */
  releasedAt?: Date | null;
  createdAt: Date;
}

export interface OpenPointer {
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
  /** pending → withdrawn (never sent: its hand-off was taken or ended first); false when it was not pending. */
  withdrawNotice(id: string, reason: string): Promise<boolean>;
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

/** The hand-off collections on a connection (models registered once per connection). */
export function handoffModels(connection: Connection) {
  return {
    handoffs: model(connection, 'Handoff', handoffSchema),
    notices: model(connection, 'HandoffNotice', noticeSchema),
    pointers: model(connection, 'OpenHandoff', pointerSchema),
    holders: model(connection, 'ConversationHolder', holderSchema),
    refs: model(connection, 'HandoffRef', refSchema),
    gates: model(connection, 'HandoffTransition', gateSchema),
  };
}

export type HandoffModels = ReturnType<typeof handoffModels>;
