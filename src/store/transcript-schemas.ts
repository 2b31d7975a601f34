/** The transcript collections in MongoDB: their mongoose schemas and the connection. */
import mongoose, { Schema, type Connection, type Model } from 'mongoose';
import type { ConversationRecord, DeliveryRecord, MessageRecord } from './transcript-types.js';

const conversationSchema = new Schema<ConversationRecord>(
  {
    _id: { type: String, required: true },
    channel: { type: String, required: true },
    address: { type: String, required: true },
    displayName: String,
    displayNameAt: Date,
    siteData: { type: Schema.Types.Mixed, default: undefined },
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

function model<T>(connection: Connection, name: string, schema: Schema<T>): Model<T> {
  return (connection.models[name] as Model<T> | undefined) ?? connection.model<T>(name, schema);
}

/** The transcript collections (what the store reads and the transcript writer writes). */
export function transcriptModels(connection: Connection) {
  return {
    conversations: model(connection, 'Conversation', conversationSchema),
    messages: model(connection, 'Message', messageSchema),
    deliveries: model(connection, 'Delivery', deliverySchema),
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
