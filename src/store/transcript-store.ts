/**
 * Transcripts in MongoDB: one document per conversation and one per message (never growing
 * arrays: FerretDB ignores `$slice`). Every hot-path read and write goes by `_id`, the only
 * filter FerretDB 1.x pushes down to its storage (anything else scans the collection):
 *   - a conversation's `_id` is its key; it also carries the bounded recent history the model
 *     sees, rewritten whole under the conversation's lock;
 *   - a message's `_id` is its ledger key (`in:<channel>:<id>`, `out:<channel>:<inbound>#<part>`),
 *     so outbound messages double as the idempotent send ledger: each part moves
 *     pending → sending → sent exactly once, and a retried turn never sends a part twice;
 *   - `deliveries` maps a channel message id (Twilio's SID) to its ledger key for status callbacks.
 * The same code runs on MongoDB (no transactions, TTL indexes or $lookup are used).
 */
import mongoose, { Schema, type Connection, type Model } from 'mongoose';
import { isDuplicateKeyError as isDuplicateKey, StorageWriteError } from '../errors/index.js';
import type { MediaReference } from '../media/inbound-media.js';

const DELIVERY_STATUSES = ['queued', 'sent', 'delivered', 'read', 'failed', 'undelivered'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];
export type MessageStatus = 'received' | 'pending' | 'sending' | 'uncertain' | DeliveryStatus;

/** Later statuses never regress to earlier ones when Twilio's callbacks arrive out of order. */
const statusRank: Record<MessageStatus, number> = {
  received: 0,
  pending: 0,
  sending: 1,
  uncertain: 1,
  queued: 2,
  sent: 3,
  delivered: 4,
  read: 5,
  failed: 6,
  undelivered: 6,
};

/** The ledger part number of the apology sent when a message is given up on (replies never split this far). */
export const APOLOGY_PART = 99;

/** How often a delivery status update re-reads after losing a race before it reports failure. */
const STATUS_CAS_ATTEMPTS = 16;

/** How many recent messages a conversation keeps inline for the model's context. */
const RECENT_MESSAGE_LIMIT = 20;

export interface RecentMessage {
  /** The message's `_id`, so replaying a turn never appends it twice. */
  id: string;
  direction: 'inbound' | 'outbound';
  text: string;
}

export interface ConversationRecord {
  /** The conversation key, e.g. `whatsapp:+14155550100`. */
  _id: string;
  channel: string;
  address: string;
  displayName?: string;
  recent: RecentMessage[];
  createdAt: Date;
  updatedAt: Date;
}

export interface MessageRecord {
  /** The ledger key: `in:<channel>:<message id>` or `out:<channel>:<inbound id>#<part>`. */
  _id: string;
  conversationId: string;
  channel: string;
  direction: 'inbound' | 'outbound';
  text: string;
  channelMessageId?: string;
  replyTo?: string;
  part?: number;
  partCount?: number;
  roleId?: string;
  /** On a reply's first part until its post-turn step runs: what that step needs (JSON, owned by the caller). */
  turn?: string;
  status: MessageStatus;
  /** When the part was last claimed for sending: where to look for it if the outcome was lost. */
  claimedAt?: Date;
  errorCode?: string;
  errorMessage?: string;
  /** An inbound message's media: store ids (GridFS), kinds, a voice note's transcription, why one was not used. */
  media?: MediaReference[];
  createdAt: Date;
  updatedAt: Date;
}

interface DeliveryRecord {
  /** The channel's message id (Twilio's SID). */
  _id: string;
  messageId: string;
}

const conversationSchema = new Schema<ConversationRecord>(
  {
    _id: { type: String, required: true },
    channel: { type: String, required: true },
    address: { type: String, required: true },
    displayName: String,
    recent: { type: [{ _id: false, id: String, direction: String, text: String }], default: [] },
  },
  { timestamps: true, versionKey: false },
);

const messageSchema = new Schema<MessageRecord>(
  {
    _id: { type: String, required: true },
    conversationId: { type: String, required: true },
    channel: { type: String, required: true },
    direction: { type: String, enum: ['inbound', 'outbound'], required: true },
    text: { type: String, required: true },
    channelMessageId: String,
    replyTo: String,
    part: Number,
    partCount: Number,
    roleId: String,
    turn: String,
    status: { type: String, required: true },
    claimedAt: Date,
    errorCode: String,
    errorMessage: String,
    media: {
      type: [{ _id: false, id: String, contentType: String, kind: String, size: Number, filename: String, transcription: String, error: String }],
      default: undefined,
    },
  },
  { timestamps: true, versionKey: false },
);
// For reading a whole conversation in order (transcript pages, exports) on MongoDB.
messageSchema.index({ conversationId: 1, createdAt: 1, _id: 1 });
messageSchema.index({ channelMessageId: 1 });
messageSchema.index({ createdAt: 1 });

const deliverySchema = new Schema<DeliveryRecord>(
  { _id: { type: String, required: true }, messageId: { type: String, required: true } },
  { versionKey: false, timestamps: { createdAt: true, updatedAt: false } },
);
deliverySchema.index({ createdAt: 1 });

export interface OpenedConversation {
  conversationId: string;
  created: boolean;
  recent: RecentMessage[];
}

export interface TranscriptStore {
  readonly conversations: Model<ConversationRecord>;
  readonly messages: Model<MessageRecord>;
  ensureIndexes(): Promise<void>;
  /** Finds or creates the conversation; returns its recent history, oldest first. */
  openConversation(input: { key: string; channel: string; address: string; displayName?: string }): Promise<OpenedConversation>;
  /** Stores an inbound message once, however often it is recorded. */
  recordInbound(input: {
    conversationId: string;
    channel: string;
    channelMessageId: string;
    text: string;
    receivedAt: Date;
    media?: MediaReference[];
  }): Promise<void>;
  /** Replaces the conversation's inline recent history (caller holds the conversation's lock). */
  saveRecent(conversationId: string, recent: readonly RecentMessage[]): Promise<void>;
  /** Reply parts an earlier attempt stored for an inbound message (a checkpoint), in order. */
  replyParts(channel: string, replyTo: string): Promise<MessageRecord[]>;
  /** Stores a reply's parts unless an earlier attempt stored them; returns the stored parts. */
  saveReplyParts(input: {
    conversationId: string;
    channel: string;
    replyTo: string;
    roleId: string;
    parts: readonly string[];
    /** Kept on the first part for whichever attempt delivers the reply (see `takeTurn`). */
    turn?: string;
  }): Promise<MessageRecord[]>;
  /** Takes (once) the `turn` a reply's first part carries; undefined when none or already taken. */
  takeTurn(messageId: string): Promise<string | undefined>;
  /** Claims a pending part for sending; false when another attempt already claimed or sent it. */
  claimPart(messageId: string): Promise<boolean>;
  /** One stored message by its ledger key. */
  message(messageId: string): Promise<MessageRecord | undefined>;
  /** Claims again a part whose earlier send outcome was lost (it was not found sent). */
  reclaimPart(messageId: string): Promise<void>;
  /** The ledger key a channel message id (Twilio's SID) was recorded for, if any. */
  deliveryOwner(channelMessageId: string): Promise<string | undefined>;
  /** Stores the apology for a message given up on, once; returns the stored ledger entry. */
  saveApology(input: { conversationId: string; channel: string; replyTo: string; text: string }): Promise<MessageRecord>;
  /** Records an inbound message as given up on (storing it if an outage kept it from being recorded). */
  markInboundFailed(input: {
    conversationId: string;
    channel: string;
    channelMessageId: string;
    text: string;
    receivedAt: Date;
    errorMessage: string;
  }): Promise<void>;
  markPartSent(messageId: string, channelMessageId: string, status: DeliveryStatus): Promise<void>;
  /** Returns a claimed part to pending so a retry can send it (the channel refused it transiently). */
  releasePart(messageId: string): Promise<void>;
  markPartFailed(messageId: string, status: 'failed' | 'uncertain', errorCode: string | undefined, errorMessage: string): Promise<void>;
  /** Applies a delivery status callback; returns false when no message has that channel id. */
  updateDeliveryStatus(input: { channelMessageId: string; status: DeliveryStatus; errorCode?: string; errorMessage?: string }): Promise<boolean>;
  /** A whole conversation in order (not a hot path: on FerretDB this scans). */
  conversationMessages(conversationId: string): Promise<MessageRecord[]>;
  /** Deletes messages, delivery ids and quiet conversations older than `cutoff`; returns counts. */
  purgeOlderThan(cutoff: Date): Promise<{ messages: number; conversations: number }>;
}

export function inboundMessageId(channel: string, channelMessageId: string): string {
  return `in:${channel}:${channelMessageId}`;
}

export function outboundMessageId(channel: string, replyTo: string, part: number): string {
  return `out:${channel}:${replyTo}#${part}`;
}

function model<T>(connection: Connection, name: string, schema: Schema<T>): Model<T> {
  return (connection.models[name] as Model<T> | undefined) ?? connection.model<T>(name, schema);
}

export function createTranscriptStore(connection: Connection): TranscriptStore {
  const conversations = model(connection, 'Conversation', conversationSchema);
  const messages = model(connection, 'Message', messageSchema);
  const deliveries = model(connection, 'Delivery', deliverySchema);

  const store: TranscriptStore = {
    conversations,
    messages,

    async ensureIndexes() {
      await Promise.all([conversations.createIndexes(), messages.createIndexes(), deliveries.createIndexes()]);
    },

    async openConversation({ key, channel, address, displayName }) {
      const result = await conversations
        .findOneAndUpdate(
          { _id: key },
          {
            $setOnInsert: { channel, address, recent: [] },
            ...(displayName ? { $set: { displayName } } : {}),
          },
          { upsert: true, returnDocument: 'after', includeResultMetadata: true, lean: true },
        )
        .exec();
      const conversation = result.value as ConversationRecord | null;
      if (!conversation) throw new Error(`conversation ${key} vanished after upsert`);
      return {
        conversationId: conversation._id,
        created: result.lastErrorObject?.updatedExisting === false,
        recent: conversation.recent ?? [],
      };
    },

    async recordInbound({ conversationId, channel, channelMessageId, text, receivedAt, media }) {
      try {
        await messages.create({
          _id: inboundMessageId(channel, channelMessageId),
          conversationId,
          channel,
          direction: 'inbound',
          text,
          channelMessageId,
          status: 'received',
          ...(media?.length ? { media } : {}),
          createdAt: receivedAt,
        });
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
    },

    async saveRecent(conversationId, recent) {
      await conversations.updateOne({ _id: conversationId }, { $set: { recent: recent.slice(-RECENT_MESSAGE_LIMIT) } }).exec();
    },

    async replyParts(channel, replyTo) {
      const find = (part: number) =>
        messages
          .findById(outboundMessageId(channel, replyTo, part))
          .lean<MessageRecord>()
          .exec();
      const first = await find(0);
      if (!first) return [];
      const rest = await Promise.all(Array.from({ length: Math.max(0, (first.partCount ?? 1) - 1) }, (_, index) => find(index + 1)));
      return [first, ...rest.filter((part) => part !== null)];
    },

    async saveReplyParts({ conversationId, channel, replyTo, roleId, parts, turn }) {
      const now = Date.now();
      const documents = parts.map((text, index) => ({
        _id: outboundMessageId(channel, replyTo, index),
        conversationId,
        channel,
        direction: 'outbound' as const,
        text,
        replyTo,
        part: index,
        partCount: parts.length,
        roleId,
        ...(index === 0 && turn !== undefined ? { turn } : {}),
        status: 'pending' as const,
        // Parts share one turn; distinct timestamps keep them in order when read back.
        createdAt: new Date(now + index),
        updatedAt: new Date(now + index),
      }));
      try {
        const inserted = await messages.insertMany(documents, { ordered: true, timestamps: false });
        if (inserted.length === documents.length) return inserted.map((document) => document.toObject<MessageRecord>());
      } catch (error) {
        // An earlier attempt stored this reply: what it stored wins.
        if (!isDuplicateKey(error)) throw error;
      }
      const stored = await store.replyParts(channel, replyTo);
      // Never an empty reply: a turn whose parts were lost is retried, not acknowledged unsent.
      if (stored.length === 0) throw new StorageWriteError(`the reply to ${replyTo} was not stored`);
      return stored;
    },

    async takeTurn(messageId) {
      const taken = await messages.findOneAndUpdate({ _id: messageId, turn: { $exists: true } }, { $unset: { turn: 1 } }, { lean: true }).exec();
      return taken?.turn ?? undefined;
    },

    async claimPart(messageId) {
      const claimed = await messages
        .findOneAndUpdate({ _id: messageId, status: 'pending' }, { $set: { status: 'sending', claimedAt: new Date() } }, { lean: true })
        .exec();
      return claimed !== null;
    },

    async message(messageId) {
      return (await messages.findById(messageId).lean<MessageRecord>().exec()) ?? undefined;
    },

    async reclaimPart(messageId) {
      await messages.updateOne({ _id: messageId }, { $set: { status: 'sending', claimedAt: new Date() } }).exec();
    },

    async deliveryOwner(channelMessageId) {
      return (await deliveries.findById(channelMessageId).lean().exec())?.messageId;
    },

    async saveApology({ conversationId, channel, replyTo, text }) {
      const _id = outboundMessageId(channel, replyTo, APOLOGY_PART);
      try {
        const [inserted] = await messages.insertMany(
          [{ _id, conversationId, channel, direction: 'outbound', text, replyTo, part: APOLOGY_PART, partCount: 1, roleId: 'system', status: 'pending' }],
          { ordered: true },
        );
        if (inserted) return inserted.toObject<MessageRecord>();
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
      const stored = await messages.findById(_id).lean<MessageRecord>().exec();
      if (!stored) throw new Error(`apology ${_id} vanished after insert`);
      return stored;
    },

    async markInboundFailed({ conversationId, channel, channelMessageId, text, receivedAt, errorMessage }) {
      await messages
        .updateOne(
          { _id: inboundMessageId(channel, channelMessageId) },
          {
            $set: { status: 'failed', errorMessage, updatedAt: new Date() },
            $setOnInsert: { conversationId, channel, direction: 'inbound', text, channelMessageId, createdAt: receivedAt },
          },
          { upsert: true, timestamps: false },
        )
        .exec();
    },

    async markPartSent(messageId, channelMessageId, status) {
      await Promise.all([
        messages.updateOne({ _id: messageId }, { $set: { channelMessageId, status } }).exec(),
        deliveries.create({ _id: channelMessageId, messageId }).catch((error: unknown) => {
          if (!isDuplicateKey(error)) throw error;
        }),
      ]);
    },

    async releasePart(messageId) {
      await messages.updateOne({ _id: messageId, status: 'sending' }, { $set: { status: 'pending' } }).exec();
    },

    async markPartFailed(messageId, status, errorCode, errorMessage) {
      await messages.updateOne({ _id: messageId }, { $set: { status, errorMessage, ...(errorCode ? { errorCode } : {}) } }).exec();
    },

    async updateDeliveryStatus({ channelMessageId, status, errorCode, errorMessage }) {
      const delivery = await deliveries.findById(channelMessageId).lean().exec();
      if (!delivery) return false;
      // Compare-and-set on the current status: callbacks for one message can race. Each lost
      // race means another write moved the status, so read it again until this one applies or
      // is outranked; one that keeps losing is reported as a failed write, never as applied.
      for (let attempt = 0; attempt < STATUS_CAS_ATTEMPTS; attempt += 1) {
        const current = await messages.findById(delivery.messageId, { status: 1 }).lean().exec();
        if (!current) return false;
        if (statusRank[current.status] >= statusRank[status]) return true;
        const updated = await messages
          .findOneAndUpdate(
            { _id: delivery.messageId, status: current.status },
            { $set: { status, ...(errorCode ? { errorCode } : {}), ...(errorMessage ? { errorMessage } : {}) } },
            { lean: true },
          )
          .exec();
        if (updated) return true;
      }
      throw new StorageWriteError(`the status of ${delivery.messageId} lost ${STATUS_CAS_ATTEMPTS} compare-and-set races`);
    },

    async conversationMessages(conversationId) {
      return messages.find({ conversationId }).sort({ createdAt: 1, _id: 1 }).lean().exec();
    },

    async purgeOlderThan(cutoff) {
      const [removedMessages, , removedConversations] = await Promise.all([
        messages.deleteMany({ createdAt: { $lt: cutoff } }).exec(),
        deliveries.deleteMany({ createdAt: { $lt: cutoff } }).exec(),
        conversations.deleteMany({ updatedAt: { $lt: cutoff } }).exec(),
      ]);
      return { messages: removedMessages.deletedCount, conversations: removedConversations.deletedCount };
    },
  };
  return store;
}

export async function connectMongo(uri: string): Promise<Connection> {
  const connection = mongoose.createConnection(uri, {
    serverSelectionTimeoutMS: 5000,
    autoIndex: false,
    autoCreate: true,
  });
  await connection.asPromise();
  return connection;
}
