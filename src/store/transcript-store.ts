/**
 * Transcripts in MongoDB: one document per conversation and one per message (never growing
 * arrays: FerretDB ignores `$slice`). Outbound messages double as the idempotent send ledger:
 * each reply part is keyed by the inbound message it answers and its index, and moves
 * pending → sending → sent exactly once, so a retried turn never sends a part twice.
 * Works unchanged on MongoDB and FerretDB (no transactions, TTL indexes or $lookup).
 */
import mongoose, { Schema, type Connection, type Model, type Types } from 'mongoose';

export const DELIVERY_STATUSES = ['queued', 'sent', 'delivered', 'read', 'failed', 'undelivered'] as const;
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

export interface ConversationRecord {
  _id: Types.ObjectId;
  key: string;
  channel: string;
  address: string;
  displayName?: string;
  createdAt: Date;
  updatedAt: Date;
}

export interface MessageRecord {
  _id: Types.ObjectId;
  conversationId: Types.ObjectId;
  channel: string;
  direction: 'inbound' | 'outbound';
  /** Unique: `in:<channel message id>` or `out:<inbound id>#<part>`. */
  ledgerKey: string;
  text: string;
  channelMessageId?: string;
  replyTo?: string;
  part?: number;
  roleId?: string;
  status: MessageStatus;
  errorCode?: string;
  errorMessage?: string;
  createdAt: Date;
  updatedAt: Date;
}

const conversationSchema = new Schema<ConversationRecord>(
  {
    key: { type: String, required: true },
    channel: { type: String, required: true },
    address: { type: String, required: true },
    displayName: String,
  },
  { timestamps: true, versionKey: false },
);
conversationSchema.index({ key: 1 }, { unique: true });

const messageSchema = new Schema<MessageRecord>(
  {
    conversationId: { type: Schema.Types.ObjectId, required: true },
    channel: { type: String, required: true },
    direction: { type: String, enum: ['inbound', 'outbound'], required: true },
    ledgerKey: { type: String, required: true },
    text: { type: String, required: true },
    channelMessageId: String,
    replyTo: String,
    part: Number,
    roleId: String,
    status: { type: String, required: true },
    errorCode: String,
    errorMessage: String,
  },
  { timestamps: true, versionKey: false },
);
messageSchema.index({ ledgerKey: 1 }, { unique: true });
messageSchema.index({ conversationId: 1, createdAt: 1, _id: 1 });
messageSchema.index({ channelMessageId: 1 });
messageSchema.index({ channel: 1, replyTo: 1, part: 1 });

export interface ReplyPartInput {
  conversationId: Types.ObjectId;
  channel: string;
  replyTo: string;
  roleId: string;
  parts: string[];
}

export interface TranscriptStore {
  readonly conversations: Model<ConversationRecord>;
  readonly messages: Model<MessageRecord>;
  ensureIndexes(): Promise<void>;
  /** Finds or creates the conversation (ids are cached in process: they never change). */
  openConversation(input: {
    key: string;
    channel: string;
    address: string;
    displayName?: string;
  }): Promise<{ conversationId: Types.ObjectId }>;
  /** Stores an inbound message once, however often it is recorded. */
  recordInbound(input: {
    conversationId: Types.ObjectId;
    channel: string;
    channelMessageId: string;
    text: string;
    receivedAt: Date;
  }): Promise<void>;
  /** The last `limit` messages before the given inbound, oldest first. */
  recentMessages(conversationId: Types.ObjectId, limit: number): Promise<MessageRecord[]>;
  /** Reply parts already stored for an inbound message (a checkpoint from an earlier attempt). */
  replyParts(channel: string, replyTo: string): Promise<MessageRecord[]>;
  /** Stores a reply's parts unless an earlier attempt stored them; returns the stored parts. */
  saveReplyParts(input: ReplyPartInput): Promise<MessageRecord[]>;
  /** Claims a pending part for sending; false when another attempt already claimed or sent it. */
  claimPart(ledgerKey: string): Promise<boolean>;
  markPartSent(ledgerKey: string, channelMessageId: string, status: DeliveryStatus): Promise<void>;
  /** Returns a claimed part to pending so a retry can send it (the channel refused it transiently). */
  releasePart(ledgerKey: string): Promise<void>;
  markPartFailed(ledgerKey: string, errorCode: string | undefined, errorMessage: string): Promise<void>;
  /** Applies a delivery status callback; returns false when no message has that id. */
  updateDeliveryStatus(input: {
    channelMessageId: string;
    status: DeliveryStatus;
    errorCode?: string;
    errorMessage?: string;
  }): Promise<boolean>;
  conversationMessages(conversationId: Types.ObjectId): Promise<MessageRecord[]>;
}

const CONVERSATION_CACHE_SIZE = 10_000;

export function outboundLedgerKey(channel: string, replyTo: string, part: number): string {
  return `out:${channel}:${replyTo}#${part}`;
}

export function createTranscriptStore(connection: Connection): TranscriptStore {
  const conversations =
    (connection.models.Conversation as Model<ConversationRecord> | undefined) ??
    connection.model<ConversationRecord>('Conversation', conversationSchema);
  const messages =
    (connection.models.Message as Model<MessageRecord> | undefined) ??
    connection.model<MessageRecord>('Message', messageSchema);

  const conversationIds = new Map<string, Types.ObjectId>();
  const isDuplicateKey = (error: unknown): boolean =>
    typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 11000;

  return {
    conversations,
    messages,

    async ensureIndexes() {
      await Promise.all([conversations.createIndexes(), messages.createIndexes()]);
    },

    async openConversation({ key, channel, address, displayName }) {
      const cached = conversationIds.get(key);
      if (cached) return { conversationId: cached };
      const conversation = await conversations
        .findOneAndUpdate(
          { key },
          { $setOnInsert: { key, channel, address }, ...(displayName ? { $set: { displayName } } : {}) },
          { upsert: true, returnDocument: 'after', lean: true },
        )
        .exec();
      if (!conversation) throw new Error(`conversation ${key} vanished after upsert`);
      if (conversationIds.size >= CONVERSATION_CACHE_SIZE) {
        conversationIds.delete(conversationIds.keys().next().value as string);
      }
      conversationIds.set(key, conversation._id);
      return { conversationId: conversation._id };
    },

    async recordInbound({ conversationId, channel, channelMessageId, text, receivedAt }) {
      try {
        await messages.create({
          conversationId,
          channel,
          direction: 'inbound',
          ledgerKey: `in:${channel}:${channelMessageId}`,
          text,
          channelMessageId,
          status: 'received',
          createdAt: receivedAt,
        });
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
    },

    async recentMessages(conversationId, limit) {
      const newestFirst = await messages
        .find({ conversationId, status: { $nin: ['pending', 'failed', 'undelivered', 'uncertain'] } })
        .sort({ createdAt: -1, _id: -1 })
        .limit(limit)
        .lean()
        .exec();
      return newestFirst.reverse();
    },

    async replyParts(channel, replyTo) {
      return messages.find({ channel, replyTo, direction: 'outbound' }).sort({ part: 1 }).lean().exec();
    },

    async saveReplyParts({ conversationId, channel, replyTo, roleId, parts }) {
      const now = Date.now();
      const documents = parts.map((text, index) => ({
        conversationId,
        channel,
        direction: 'outbound' as const,
        ledgerKey: outboundLedgerKey(channel, replyTo, index),
        text,
        replyTo,
        part: index,
        roleId,
        status: 'pending' as const,
        // Parts share one turn; distinct timestamps keep them in order when read back.
        createdAt: new Date(now + index),
        updatedAt: new Date(now + index),
      }));
      try {
        const inserted = await messages.insertMany(documents, { ordered: false, timestamps: false });
        return inserted.map((document) => document.toObject<MessageRecord>());
      } catch (error) {
        // An earlier attempt stored (some of) this reply: what it stored wins.
        if (!isDuplicateKey(error) && !(error as { writeErrors?: { code?: number }[] }).writeErrors?.every((entry) => entry.code === 11000)) {
          throw error;
        }
        return this.replyParts(channel, replyTo);
      }
    },

    async claimPart(ledgerKey) {
      const claimed = await messages
        .findOneAndUpdate({ ledgerKey, status: 'pending' }, { $set: { status: 'sending' } }, { lean: true })
        .exec();
      return claimed !== null;
    },

    async markPartSent(ledgerKey, channelMessageId, status) {
      await messages
        .updateOne({ ledgerKey, status: 'sending' }, { $set: { channelMessageId, status } })
        .exec();
    },

    async releasePart(ledgerKey) {
      await messages.updateOne({ ledgerKey, status: 'sending' }, { $set: { status: 'pending' } }).exec();
    },

    async markPartFailed(ledgerKey, errorCode, errorMessage) {
      await messages
        .updateOne(
          { ledgerKey },
          { $set: { status: 'failed', errorMessage, ...(errorCode ? { errorCode } : {}) } },
        )
        .exec();
    },

    async updateDeliveryStatus({ channelMessageId, status, errorCode, errorMessage }) {
      const lower = (Object.keys(statusRank) as MessageStatus[]).filter(
        (candidate) => statusRank[candidate] < statusRank[status],
      );
      const result = await messages
        .updateOne(
          { channelMessageId, status: { $in: lower } },
          { $set: { status, ...(errorCode ? { errorCode } : {}), ...(errorMessage ? { errorMessage } : {}) } },
        )
        .exec();
      if (result.matchedCount > 0) return true;
      return (await messages.exists({ channelMessageId }).exec()) !== null;
    },

    async conversationMessages(conversationId) {
      return messages.find({ conversationId }).sort({ createdAt: 1, _id: 1 }).lean().exec();
    },
  };
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
