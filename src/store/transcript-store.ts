/**
 * Transcripts: hot in Redis, durable in MongoDB. A turn never waits on MongoDB:
 *   - a conversation's record and its bounded recent history (what the model sees) are a Redis
 *     hash under the conversation's hash tag, rewritten whole under the conversation's lock;
 *   - the send ledger is Redis too: a reply's parts are one hash (`transcript-keys.ts`), each
 *     field a ledger entry keyed by its message `_id` (`out:<channel>:<inbound>#<part>`) that
 *     moves pending → sending → sent exactly once by compare-and-set scripts, so a retried turn
 *     never sends a part twice; a delivery status callback names the part it reports on;
 *   - every transcript record (inbound, reply parts, statuses, delivery ids, conversations) is
 *     appended to the outbox (`outbox.ts`), which the transcript writer drains into MongoDB by
 *     `_id` — one document per conversation and per message (FerretDB pushes down only `_id`).
 * Reads that are not a turn's (a whole conversation, retention, the transcript page) stay on
 * MongoDB. No transactions, TTL indexes or $lookup are used, so the same code runs on MongoDB.
 * The store is put together from its parts: `transcript-conversations.ts` (the conversation's hash),
 * `transcript-messages.ts` (records and reply parts), `transcript-delivery.ts` (the ledger's moves,
 * delivery statuses), `transcript-history.ts` (MongoDB reads); types in `transcript-types.ts`.
 */
import type { Connection } from 'mongoose';
import type { RedisClient } from '../redis.js';
import type { TranscriptOutbox } from './outbox.js';
import { createTranscriptConversations } from './transcript-conversations.js';
import { createTranscriptDelivery } from './transcript-delivery.js';
import { createTranscriptHistory } from './transcript-history.js';
import { createTranscriptMessages } from './transcript-messages.js';
import { createTurnRecords, transcriptContext } from './transcript-records.js';
import { transcriptModels } from './transcript-schemas.js';
import type { TranscriptStore } from './transcript-types.js';

export { partRecords } from './transcript-records.js';
export { connectMongo, transcriptModels } from './transcript-schemas.js';
export {
  APOLOGY_PART,
  HOLDING_PART,
  RECENT_MESSAGE_LIMIT,
  inboundMessageId,
  outboundMessageId,
  type ConversationRecord,
  type DeliveryStatus,
  type MessageRecord,
  type MessageStatus,
  type OpenedConversation,
  type RecentMessage,
  type TranscriptStore,
  type TurnRecords,
} from './transcript-types.js';

export interface TranscriptStoreOptions {
  /** The hot copy: conversations, recent history and the send ledger. */
  redis: RedisClient;
  /** Where every transcript record goes on its way to MongoDB. */
  outbox: TranscriptOutbox;
  /** The clock a history write is stamped by (`historyAt`, ms): `Date.now` unless a test moves time. */
  clock?: () => number;
}

/** The store: its parts (`transcript-conversations`, `-messages`, `-delivery`, `-history`) over one Redis and outbox. */
export function createTranscriptStore(connection: Connection, options: TranscriptStoreOptions): TranscriptStore {
  const models = transcriptModels(connection);
  const context = transcriptContext(options.redis, options.outbox);
  return {
    conversations: models.conversations,
    messages: models.messages,
    turnRecords: () => createTurnRecords(options.outbox),
    ...createTranscriptConversations(context, options.clock),
    ...createTranscriptMessages(context),
    ...createTranscriptDelivery(context),
    ...createTranscriptHistory(models),
  };
}
