/**
 * Transcripts: hot in Redis, durable in MongoDB. A turn never waits on MongoDB:
 *   - a conversation's record and its bounded recent history (what the model sees) are a Redis
 *     hash under the conversation's hash tag, rewritten whole under the conversation's lock;
 *   - the send ledger is Redis too: a reply's parts are one hash (`transcript-keys.ts`), each
 *     field a ledger entry keyed by its message `_id` (`out:<channel>:<inbound>#<part>`) that
 *     moves pending → sending → sent exactly once by compare-and-set scripts, so a retried turn
 *     never sends a part twice; a delivery id (Twilio's SID) maps to its ledger key;
 *   - every transcript record (inbound, reply parts, statuses, delivery ids, conversations) is
 *     appended to the outbox (`outbox.ts`), which the transcript writer drains into MongoDB by
 *     `_id` — one document per conversation and per message (FerretDB pushes down only `_id`).
 * Reads that are not a turn's (a whole conversation, retention, the transcript page) stay on
 * MongoDB. No transactions, TTL indexes or $lookup are used, so the same code runs on MongoDB.
 */
import { luaScript, type RedisClient } from '../redis.js';
import mongoose, { Schema, type Connection, type Model } from 'mongoose';
import { LRUCache } from 'lru-cache';
import { z } from 'zod';
import { StorageWriteError } from '../errors/index.js';
import { OutboxMessageSchema, type TranscriptOutbox, type TranscriptRecord } from './outbox.js';
import { CONVERSATION_TTL_SECONDS, CUSTOMER_AT_FIELD, LEDGER_TTL_SECONDS, transcriptKeys } from './transcript-keys.js';
import type { MediaReference } from '../media/inbound-media.js';

const DELIVERY_STATUSES = ['queued', 'sent', 'delivered', 'read', 'failed', 'undelivered'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];
export type MessageStatus = 'received' | 'pending' | 'sending' | 'uncertain' | DeliveryStatus;

/** Later statuses never regress to earlier ones when Twilio's callbacks arrive out of order. */
export const statusRank: Record<MessageStatus, number> = {
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
/** The ledger part number of a model outage's holding message (`src/turn/holding-notice.ts`). */
export const HOLDING_PART = 98;

/** How many recent messages a conversation keeps inline for the model's context. */
export const RECENT_MESSAGE_LIMIT = 20;
/**
 * A process refreshes a conversation hash's TTL (CONVERSATION_TTL_SECONDS) when it writes its
 * history at most this often, not every turn: a quiet conversation leaves Redis a day early at worst.
 */
const TTL_REFRESH_MS = 24 * 60 * 60 * 1000;
/** Conversations whose last TTL refresh a process remembers (the oldest forgotten first: refreshed again). */
const TTL_REFRESH_MEMORY = 50_000;

const RecentMessageSchema = z.object({ id: z.string(), direction: z.enum(['inbound', 'outbound']), text: z.string() });

/** One entry of the recent history; `id` is the message's `_id`, so replaying a turn never appends it twice. */
export type RecentMessage = z.infer<typeof RecentMessageSchema>;

export interface ConversationRecord {
  /** The conversation key, e.g. `whatsapp:+14155550100`. */
  _id: string;
  channel: string;
  address: string;
  displayName?: string;
  /** When the record the name came from was made: an older rename arriving late never replaces it. */
  displayNameAt?: Date;
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
  /**
   * Only on a part `saveReplyParts` has just stored already claimed for its caller (`claimFirst`):
   * the caller sends it with no claim of its own. Never stored or recorded.
   */
  claimedNow?: true;
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
    displayNameAt: Date,
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

/**
 * The transcript records of one turn, appended to the outbox as one entry when the turn ends
 * (`flush`), not one XADD per step. Nothing is lost by waiting: a turn that ends without
 * flushing has not acknowledged its batch, so its retry records everything again — the
 * resumed reply parts from the ledger as it stands (`partRecords`), statuses and delivery ids
 * included — and every record is idempotent by `_id`.
 */
export interface TurnRecords {
  add(records: readonly TranscriptRecord[]): void;
  /** Appends what was added since the last flush as one outbox entry (nothing when empty). */
  flush(): Promise<void>;
}

export interface OpenedConversation {
  conversationId: string;
  created: boolean;
  recent: RecentMessage[];
}

export interface TranscriptStore {
  readonly conversations: Model<ConversationRecord>;
  readonly messages: Model<MessageRecord>;
  ensureIndexes(): Promise<void>;
  /** A turn's records, appended as one outbox entry by `flush` (see `TurnRecords`). */
  turnRecords(): TurnRecords;
  /**
   * Finds or creates the conversation; returns its recent history, oldest first. With a turn's
   * `records`, its record goes there every time (a retry must not depend on the attempt that
   * created it having flushed); without, to the outbox when it was created or renamed.
   */
  openConversation(input: { key: string; channel: string; address: string; displayName?: string }, records?: TurnRecords): Promise<OpenedConversation>;
  /** Stores an inbound message once, however often it is recorded (with `records`: when the turn flushes). */
  recordInbound(
    input: {
      conversationId: string;
      channel: string;
      channelMessageId: string;
      text: string;
      receivedAt: Date;
      media?: MediaReference[];
    },
    records?: TurnRecords,
  ): Promise<void>;
  /** The conversation's recent history, oldest first (empty when unknown). */
  recent(conversationId: string): Promise<RecentMessage[]>;
  /**
   * Replaces the conversation's inline recent history (caller holds the conversation's lock);
   * `customerAt` stamps when the customer last wrote (WhatsApp's 24-hour window) in the same write.
   */
  saveRecent(conversationId: string, recent: readonly RecentMessage[], customerAt?: number): Promise<void>;
  /** Reply parts an earlier attempt stored for an inbound message (a checkpoint), in order. */
  replyParts(channel: string, replyTo: string): Promise<MessageRecord[]>;
  /**
   * Stores a reply's parts unless an earlier attempt stored them; returns the stored parts. Their
   * records (`partRecords`, as stored) go to `records`, or to the outbox at once.
   */
  saveReplyParts(
    input: {
      conversationId: string;
      channel: string;
      replyTo: string;
      roleId: string;
      parts: readonly string[];
      /** Kept on the first part for whichever attempt delivers the reply (see `takeTurn`). */
      turn?: string;
      /**
       * The caller sends the first part at once: when this attempt stores the parts, the first is
       * stored claimed (`sending`, `claimedNow`), one write instead of a store and a claim.
       */
      claimFirst?: boolean;
    },
    records?: TurnRecords,
  ): Promise<MessageRecord[]>;
  /** Takes (once) the `turn` a reply's first part carries; undefined when none or already taken. */
  takeTurn(messageId: string): Promise<string | undefined>;
  /**
   * Takes (once) the `turn` of a reply whose parts this attempt stored (its first part as
   * `saveReplyParts` returned it carries the payload, so nothing is read back): true when it was
   * still there.
   */
  dropTurn(messageId: string): Promise<boolean>;
  /** Claims a pending part for sending; false when another attempt already claimed or sent it. */
  claimPart(messageId: string): Promise<boolean>;
  /** One stored message by its ledger key. */
  message(messageId: string): Promise<MessageRecord | undefined>;
  /** Claims again a part whose earlier send outcome was lost (it was not found sent). */
  reclaimPart(messageId: string): Promise<void>;
  /** The ledger key a channel message id (Twilio's SID) was recorded for, if any. */
  deliveryOwner(channelMessageId: string): Promise<string | undefined>;
  /**
   * Stores the apology for a message given up on (or, with `part`, another one-off notice of its
   * reply: the holding message of a model outage), once; returns the stored ledger entry.
   */
  saveApology(input: { conversationId: string; channel: string; replyTo: string; text: string; part?: number }): Promise<MessageRecord>;
  /** Records an inbound message as given up on (storing it if an outage kept it from being recorded). */
  markInboundFailed(input: {
    conversationId: string;
    channel: string;
    channelMessageId: string;
    text: string;
    receivedAt: Date;
    errorMessage: string;
  }): Promise<void>;
  /**
   * With `records`, its status and delivery id are recorded when the turn flushes (the ledger entry
   * first). With `takeTurn` (the reply's last part, whose parts this attempt stored) the reply's
   * `turn` is taken in the same write: true when it was still there.
   */
  markPartSent(messageId: string, channelMessageId: string, status: DeliveryStatus, records?: TurnRecords, takeTurn?: boolean): Promise<boolean>;
  /** Returns a claimed part to pending so a retry can send it (the channel refused it transiently). */
  releasePart(messageId: string): Promise<void>;
  markPartFailed(messageId: string, status: 'failed' | 'uncertain', errorCode: string | undefined, errorMessage: string, records?: TurnRecords): Promise<void>;
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

/** The ledger key's parts: which reply hash and field hold it (undefined: not a reply part). */
function ledgerSlot(messageId: string): { key: string; field: string } | undefined {
  const match = /^out:([^:]+):(.+)#(\d+)$/.exec(messageId);
  if (!match) return undefined;
  const [, channel = '', replyTo = '', part = ''] = match;
  return { key: transcriptKeys.reply(channel, replyTo), field: part };
}

/** A reply part as Redis holds it: the record with ISO dates (the `turn` payload is a field of its own). */
const StoredPartSchema = OutboxMessageSchema.extend({ claimedAt: z.iso.datetime().optional(), errorCode: z.string().optional() });
type StoredPart = z.infer<typeof StoredPartSchema>;

function fromStored(part: StoredPart): MessageRecord {
  const { createdAt, updatedAt, claimedAt, ...rest } = part;
  return { ...rest, createdAt: new Date(createdAt), updatedAt: new Date(updatedAt), ...(claimedAt ? { claimedAt: new Date(claimedAt) } : {}) };
}

function toRecord(raw: string): MessageRecord {
  return fromStored(StoredPartSchema.parse(JSON.parse(raw)));
}

function toOutbox(part: MessageRecord): TranscriptRecord {
  const { claimedAt: _claimedAt, claimedNow: _claimedNow, errorCode: _errorCode, turn: _turn, createdAt, updatedAt, ...rest } = part;
  return { kind: 'message', message: { ...rest, createdAt: createdAt.toISOString(), updatedAt: updatedAt.toISOString() } };
}

/**
 * A reply part's transcript records as its ledger entry stands: the message, and once it moved
 * on from `pending` its status (and delivery id), so a retry resuming parts an earlier attempt
 * sent records what that attempt may not have flushed.
 */
export function partRecords(part: MessageRecord): TranscriptRecord[] {
  const records: TranscriptRecord[] = [toOutbox(part)];
  if (part.status === 'pending') return records;
  const at = part.updatedAt.toISOString();
  records.push({
    kind: 'status',
    _id: part._id,
    status: part.status,
    ...(part.channelMessageId ? { channelMessageId: part.channelMessageId } : {}),
    ...(part.errorCode ? { errorCode: part.errorCode } : {}),
    ...(part.errorMessage ? { errorMessage: part.errorMessage } : {}),
    at,
  });
  if (part.channelMessageId) records.push({ kind: 'delivery', _id: part.channelMessageId, messageId: part._id, at });
  return records;
}

/** Statuses a part may move to `status` from: lower-ranked ones (a status never regresses). */
function outranked(status: MessageStatus): string {
  return `,${(Object.keys(statusRank) as MessageStatus[]).filter((from) => statusRank[from] < statusRank[status]).join(',')},`;
}

// Finds or creates the conversation (its display name kept current); returns created, renamed, recent.
// Run only when a plain read found it missing or renamed: the TTL is refreshed where the history is written (saveRecent).
const openScript = luaScript(`
local stored = redis.call('HMGET', KEYS[1], 'channel', 'displayName', 'recent')
local created = 0
local renamed = 0
if not stored[1] then
  redis.call('HSET', KEYS[1], 'channel', ARGV[1], 'address', ARGV[2], 'createdAt', ARGV[4], 'recent', '[]')
  redis.call('EXPIRE', KEYS[1], ARGV[5])
  created = 1
end
if ARGV[3] ~= '' and stored[2] ~= ARGV[3] then
  redis.call('HSET', KEYS[1], 'displayName', ARGV[3])
  renamed = 1
end
return {created, renamed, stored[3] or '[]'}
`);

// Stores a reply's parts (and its one-shot turn payload) unless an earlier attempt stored them.
const savePartsScript = luaScript(`
if redis.call('HEXISTS', KEYS[1], '0') == 1 then return 0 end
local fields = {}
for i = 3, #ARGV do
  fields[#fields + 1] = tostring(i - 3)
  fields[#fields + 1] = ARGV[i]
end
if ARGV[2] ~= '' then
  fields[#fields + 1] = 'turn'
  fields[#fields + 1] = ARGV[2]
end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
`);

// Marks a part sent (its delivery id, and its status unless a later one got there first: ARGV[4]
// lists the statuses it may move from, as a delivery callback may land before it on a cluster,
// where the delivery id is on another node) and, with ARGV[3] = 'turn', takes the reply's turn
// payload: returns 1 when it was there.
const markSentScript = luaScript(`
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if raw then
  local entry = cjson.decode(raw)
  local changes = cjson.decode(ARGV[2])
  if not string.find(ARGV[4], ',' .. entry.status .. ',', 1, true) then changes.status = nil end
  for k, v in pairs(changes) do entry[k] = v end
  redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(entry))
end
if ARGV[3] == '' then return 0 end
return redis.call('HDEL', KEYS[1], ARGV[3])
`);

// Stores one entry unless present (the apology); returns the stored one.
const saveOnceScript = luaScript(`
redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return redis.call('HGET', KEYS[1], ARGV[1])
`);

const takeScript = luaScript(`
local value = redis.call('HGET', KEYS[1], ARGV[1])
if value then redis.call('HDEL', KEYS[1], ARGV[1]) end
return value
`);

// Compare-and-set on one ledger entry: applies the patch when its status is listed (',a,b,'; '' any).
// Returns 1 applied, 0 refused by its status, -1 no such entry.
const patchScript = luaScript(`
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return -1 end
local entry = cjson.decode(raw)
if ARGV[3] ~= '' and not string.find(ARGV[3], ',' .. entry.status .. ',', 1, true) then return 0 end
for k, v in pairs(cjson.decode(ARGV[2])) do entry[k] = v end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(entry))
return 1
`);

export interface TranscriptStoreOptions {
  /** The hot copy: conversations, recent history, the send ledger and delivery ids. */
  redis: RedisClient;
  /** Where every transcript record goes on its way to MongoDB. */
  outbox: TranscriptOutbox;
}

/** The transcript collections (what the store reads and the transcript writer writes). */
export function transcriptModels(connection: Connection) {
  return {
    conversations: model(connection, 'Conversation', conversationSchema),
    messages: model(connection, 'Message', messageSchema),
    deliveries: model(connection, 'Delivery', deliverySchema),
  };
}

export function createTranscriptStore(connection: Connection, options: TranscriptStoreOptions): TranscriptStore {
  const { redis, outbox } = options;
  const { conversations, messages, deliveries } = transcriptModels(connection);
  const now = () => new Date().toISOString();
  /** Conversations whose hash's TTL this process set within TTL_REFRESH_MS. */
  const ttlRefreshed = new LRUCache<string, true>({ max: TTL_REFRESH_MEMORY, ttl: TTL_REFRESH_MS });

  const patch = async (messageId: string, changes: Partial<StoredPart>, from = ''): Promise<number> => {
    const slot = ledgerSlot(messageId);
    if (!slot) return -1;
    return Number(await patchScript(redis, [slot.key], [slot.field, JSON.stringify({ ...changes, updatedAt: now() }), from]));
  };

  /** To the turn's records when given, else one outbox entry now. */
  const record = async (records: TurnRecords | undefined, added: readonly TranscriptRecord[]) => {
    if (records) records.add(added);
    else await outbox.append(added);
  };

  const store: TranscriptStore = {
    conversations,
    messages,

    turnRecords() {
      let gathered: TranscriptRecord[] = [];
      return {
        add(added) {
          gathered.push(...added);
        },
        async flush() {
          if (gathered.length === 0) return;
          const flushing = gathered;
          gathered = [];
          try {
            await outbox.append(flushing);
          } catch (error) {
            gathered = [...flushing, ...gathered];
            throw error;
          }
        },
      };
    },

    async ensureIndexes() {
      await Promise.all([conversations.createIndexes(), messages.createIndexes(), deliveries.createIndexes()]);
    },

    async openConversation({ key, channel, address, displayName }, records) {
      const at = now();
      const hash = transcriptKeys.conversation(key);
      // One plain read when the conversation exists and keeps its name (nearly every turn); the
      // script (which reads again) only to create it or rename it.
      const [storedChannel, storedName, storedRecent] = await redis.hmget(hash, 'channel', 'displayName', 'recent');
      const [created, renamed, recent] =
        storedChannel !== null && (!displayName || storedName === displayName)
          ? [0, 0, storedRecent ?? '[]']
          : ((await openScript(redis, [hash], [channel, address, displayName ?? '', at, CONVERSATION_TTL_SECONDS])) as [number, number, string]);
      // Created with its TTL just now: its history writes need not set it again today.
      if (created === 1) ttlRefreshed.set(key, true);
      if (records || created === 1 || renamed === 1) {
        // A name new in Redis says so: every writer writes it, whatever it wrote before.
        const named = displayName ? { displayName, ...(created === 1 || renamed === 1 ? { nameChanged: true as const } : {}) } : {};
        await record(records, [{ kind: 'conversation', _id: key, channel, address, ...named, at }]);
      }
      return { conversationId: key, created: created === 1, recent: z.array(RecentMessageSchema).parse(JSON.parse(recent)) };
    },

    async recordInbound({ conversationId, channel, channelMessageId, text, receivedAt, media }, records) {
      const at = receivedAt.toISOString();
      await record(records, [
        {
          kind: 'message',
          message: {
            _id: inboundMessageId(channel, channelMessageId),
            conversationId,
            channel,
            direction: 'inbound',
            text,
            channelMessageId,
            status: 'received',
            ...(media?.length ? { media } : {}),
            createdAt: at,
            updatedAt: at,
          },
        },
      ]);
    },

    async recent(conversationId) {
      const raw = await redis.hget(transcriptKeys.conversation(conversationId), 'recent');
      return raw === null ? [] : z.array(RecentMessageSchema).parse(JSON.parse(raw));
    },

    async saveRecent(conversationId, recent, customerAt) {
      const hash = transcriptKeys.conversation(conversationId);
      const fields: Record<string, string> = { recent: JSON.stringify(recent.slice(-RECENT_MESSAGE_LIMIT)) };
      if (customerAt !== undefined) fields[CUSTOMER_AT_FIELD] = String(customerAt);
      if (ttlRefreshed.has(conversationId)) {
        // Its TTL was set by this process within a day (a hash lost meanwhile is created again, TTL and all, when opened).
        await redis.hset(hash, fields);
        return;
      }
      // One round trip, no script: a failed EXPIRE only leaves the TTL the last write set.
      const results = await redis.pipeline().hset(hash, fields).expire(hash, CONVERSATION_TTL_SECONDS).exec();
      for (const [error] of results ?? []) if (error) throw error;
      ttlRefreshed.set(conversationId, true);
    },

    async replyParts(channel, replyTo) {
      const stored = await redis.hgetall(transcriptKeys.reply(channel, replyTo));
      if (stored['0'] === undefined) return [];
      const first = toRecord(stored['0']);
      const rest = Array.from({ length: Math.max(0, (first.partCount ?? 1) - 1) }, (_, index) => stored[String(index + 1)]);
      return [first, ...rest.filter((raw) => raw !== undefined).map(toRecord)];
    },

    async saveReplyParts({ conversationId, channel, replyTo, roleId, parts, turn, claimFirst }, records) {
      const started = Date.now();
      const documents = parts.map((text, index): StoredPart => ({
        _id: outboundMessageId(channel, replyTo, index),
        conversationId,
        channel,
        direction: 'outbound',
        text,
        replyTo,
        part: index,
        partCount: parts.length,
        roleId,
        status: 'pending',
        // Parts share one turn; distinct timestamps keep them in order when read back.
        createdAt: new Date(started + index).toISOString(),
        updatedAt: new Date(started + index).toISOString(),
      }));
      // The first part claimed as it is stored (see `claimFirst`); its record still says pending, as a claim's would.
      const claimed = claimFirst
        ? documents.map((document, index) => (index === 0 ? { ...document, status: 'sending' as const, claimedAt: document.createdAt } : document))
        : documents;
      const inserted = await savePartsScript(
        redis,
        [transcriptKeys.reply(channel, replyTo)],
        [LEDGER_TTL_SECONDS, turn ?? '', ...claimed.map((document) => JSON.stringify(document))],
      );
      if (inserted === 1) {
        await record(
          records,
          documents.map((document) => toOutbox(fromStored(document))),
        );
        // Parts this attempt stored carry its turn payload (see `dropTurn`), the first its claim.
        return claimed.map((document, index) => ({
          ...fromStored(document),
          ...(index === 0 && turn ? { turn } : {}),
          ...(index === 0 && claimFirst ? { claimedNow: true as const } : {}),
        }));
      }
      // An earlier attempt stored this reply: what it stored wins.
      const stored = await store.replyParts(channel, replyTo);
      // Never an empty reply: a turn whose parts were lost is retried, not acknowledged unsent.
      if (stored.length === 0) throw new StorageWriteError(`the reply to ${replyTo} was not stored`);
      // Recorded by every attempt (an insert by `_id` is idempotent), so a crash between the two writes loses nothing.
      await record(records, stored.flatMap(partRecords));
      return stored;
    },

    async takeTurn(messageId) {
      const slot = ledgerSlot(messageId);
      if (!slot) return undefined;
      const taken = (await takeScript(redis, [slot.key], ['turn'])) as string | null;
      return taken ?? undefined;
    },

    async dropTurn(messageId) {
      const slot = ledgerSlot(messageId);
      return slot ? (await redis.hdel(slot.key, 'turn')) === 1 : false;
    },

    async claimPart(messageId) {
      return (await patch(messageId, { status: 'sending', claimedAt: now() }, ',pending,')) === 1;
    },

    async message(messageId) {
      const slot = ledgerSlot(messageId);
      const raw = slot ? await redis.hget(slot.key, slot.field) : null;
      return raw === null ? undefined : toRecord(raw);
    },

    async reclaimPart(messageId) {
      await patch(messageId, { status: 'sending', claimedAt: now() });
    },

    async deliveryOwner(channelMessageId) {
      return (await redis.get(transcriptKeys.delivery(channelMessageId))) ?? undefined;
    },

    async saveApology({ conversationId, channel, replyTo, text, part = APOLOGY_PART }) {
      const _id = outboundMessageId(channel, replyTo, part);
      const at = now();
      const entry: StoredPart = {
        _id,
        conversationId,
        channel,
        direction: 'outbound',
        text,
        replyTo,
        part,
        partCount: 1,
        roleId: 'system',
        status: 'pending',
        createdAt: at,
        updatedAt: at,
      };
      const stored = (await saveOnceScript(
        redis,
        [transcriptKeys.reply(channel, replyTo)],
        [String(part), JSON.stringify(entry), LEDGER_TTL_SECONDS],
      )) as string;
      const apology = toRecord(stored);
      await outbox.append([toOutbox(apology)]);
      return apology;
    },

    async markInboundFailed({ conversationId, channel, channelMessageId, text, receivedAt, errorMessage }) {
      const _id = inboundMessageId(channel, channelMessageId);
      const received = receivedAt.toISOString();
      await outbox.append([
        {
          kind: 'message',
          message: { _id, conversationId, channel, direction: 'inbound', text, channelMessageId, status: 'received', createdAt: received, updatedAt: received },
        },
        { kind: 'status', _id, status: 'failed', errorMessage, at: now() },
      ]);
    },

    async markPartSent(messageId, channelMessageId, status, records, takeTurn) {
      const at = now();
      // The record first: a crash before the ledger write leaves the part `sending`, resolved by
      // lookup. A turn's records flush after it: a crash before that leaves the part `sent` in the
      // ledger, and the retry records it from there (`partRecords`).
      await record(records, [
        { kind: 'status', _id: messageId, status, channelMessageId, at },
        { kind: 'delivery', _id: channelMessageId, messageId, at },
      ]);
      const slot = ledgerSlot(messageId);
      // The entry and the delivery id are independent writes (on two slots), sent together: a
      // lookup accepts a send whose delivery id is its own, and the entry never regresses if a
      // callback finds the delivery id first.
      const [taken] = await Promise.all([
        slot
          ? markSentScript(
              redis,
              [slot.key],
              [slot.field, JSON.stringify({ status, channelMessageId, updatedAt: at }), takeTurn ? 'turn' : '', outranked(status)],
            )
          : 0,
        redis.set(transcriptKeys.delivery(channelMessageId), messageId, 'EX', LEDGER_TTL_SECONDS),
      ]);
      return Number(taken) === 1;
    },

    async releasePart(messageId) {
      await patch(messageId, { status: 'pending' }, ',sending,');
    },

    async markPartFailed(messageId, status, errorCode, errorMessage, records) {
      await record(records, [{ kind: 'status', _id: messageId, status, errorMessage, ...(errorCode ? { errorCode } : {}), at: now() }]);
      await patch(messageId, { status, errorMessage, ...(errorCode ? { errorCode } : {}) });
    },

    async updateDeliveryStatus({ channelMessageId, status, errorCode, errorMessage }) {
      const messageId = await store.deliveryOwner(channelMessageId);
      if (!messageId) return false;
      // The record first (the writer keeps the same rank rule), then a compare-and-set in one
      // script: a status applies only over a lower-ranked one, so callbacks arriving out of
      // order (or racing) never move a part backwards.
      const changes = { status, ...(errorCode ? { errorCode } : {}), ...(errorMessage ? { errorMessage } : {}) };
      await outbox.append([{ kind: 'status', _id: messageId, channelMessageId, ...changes, at: now() }]);
      await patch(messageId, changes, outranked(status));
      return true;
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
