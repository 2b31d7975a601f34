/**
 * Rebuilds conversations' recent history in Redis from MongoDB, once per Redis, so a Redis that
 * lost its data (or a deployment over existing data) keeps its conversations' context. A turn
 * reads its history only from the Redis hot copy (`transcript-keys.ts`) and never from MongoDB,
 * so without this a conversation's next turn would start with no history.
 *
 * The history comes from the transcript itself, the `messages` collection the transcript writer
 * fills (the MongoDB-only version before the hot path stored the same documents): the last
 * RECENT_MESSAGE_LIMIT messages of each conversation active within the hot copy's lifetime
 * (CONVERSATION_TTL_SECONDS), shaped as a turn stores them (`{ id, direction, text }`, oldest
 * first), leaving out what a turn leaves out of it (a message given up on, a failed reply part,
 * the apology). The conversation documents' own `recent` field is no longer written since the hot
 * path, so it is not read.
 *
 * It runs in the background in every worker process once MongoDB answers (start-up never waits
 * for it, and turns go on meanwhile). A marker per MongoDB database in Redis says it is done, so
 * it runs once per Redis: a Redis that lost its data lost the marker too, and the next worker
 * start rebuilds again. A lock keeps several processes from scanning at once (the others skip
 * it; a holder that died frees it after LOCK_TTL_MS, and the next worker start runs it).
 *
 * FerretDB pushes down only `_id` filters, so every read is a streaming pass with no filter (the
 * cheapest read when anything else would scan the table anyway): one over `conversations` to find
 * the active ones, then one over `messages` per CONVERSATIONS_PER_PASS of them, keeping at most
 * the last RECENT_MESSAGE_LIMIT messages of each in memory. A hot copy is only ever created where
 * none exists (one script: a turn that already created one keeps it).
 */
import { z } from 'zod';
import type { Model } from 'mongoose';
import type { Logger } from '../logger.js';
import { KEY_PREFIX, type RedisClient } from '../redis.js';
import { releaseLease } from '../redis-lease.js';
import { CONVERSATION_TTL_SECONDS, CUSTOMER_AT_FIELD, transcriptKeys } from './transcript-keys.js';
import { APOLOGY_PART, HOLDING_PART, RECENT_MESSAGE_LIMIT, type ConversationRecord, type MessageRecord, type RecentMessage } from './transcript-store.js';

/** How long one process may hold the copy before another may take it over. */
const LOCK_TTL_MS = 10 * 60 * 1000;
const SCAN_BATCH = 200;
/** Active conversations whose messages one pass over `messages` collects (bounds the memory a pass holds). */
const CONVERSATIONS_PER_PASS = 5_000;

/** The copy's own keys (single-key commands only: no hash tag needed). */
const backfillKeys = {
  done: (database: string) => `${KEY_PREFIX}:tx:backfill:done:${database}`,
  lock: (database: string) => `${KEY_PREFIX}:tx:backfill:lock:${database}`,
};

// KEYS: the conversation's hash. ARGV: channel, address, displayName ('' for none), createdAt, recent (JSON), ttl (s),
// customerAt field, when the customer last wrote (ms; '' for unknown).
// Creates the hot copy only when there is none (a turn that created one keeps it). Returns 1 if created.
const copyScript = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'channel', ARGV[1], 'address', ARGV[2], 'createdAt', ARGV[4], 'recent', ARGV[5])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'displayName', ARGV[3]) end
if ARGV[8] ~= '' then redis.call('HSET', KEYS[1], ARGV[7], ARGV[8]) end
redis.call('EXPIRE', KEYS[1], ARGV[6])
return 1`;

/** A conversation document as any version stored it: what the copy needs, checked. */
const StoredConversationSchema = z.object({
  _id: z.string(),
  channel: z.string(),
  address: z.string(),
  displayName: z.string().optional().nullable(),
  createdAt: z.date().optional(),
  updatedAt: z.date().optional(),
});

/** A message document as any version stored it: what the history needs, checked. */
const StoredMessageSchema = z.object({
  _id: z.string(),
  conversationId: z.string(),
  direction: z.enum(['inbound', 'outbound']),
  text: z.string(),
  status: z.string().optional(),
  part: z.number().optional(),
  createdAt: z.date(),
});
type StoredMessage = z.infer<typeof StoredMessageSchema>;

interface ActiveConversation {
  _id: string;
  channel: string;
  address: string;
  displayName: string;
  createdAt: Date;
  lastWrite: number;
}

/** Oldest first; a turn's inbound before its reply when stored in the same millisecond, parts in order. */
const byTranscriptOrder = (a: StoredMessage, b: StoredMessage) =>
  a.createdAt.getTime() - b.createdAt.getTime() ||
  (a.direction === b.direction ? 0 : a.direction === 'inbound' ? -1 : 1) ||
  (a.part ?? 0) - (b.part ?? 0) ||
  (a._id < b._id ? -1 : a._id > b._id ? 1 : 0);

/** What a turn keeps in its history: not a message given up on, a failed reply part, an apology nor a holding message. */
const inHistory = (message: StoredMessage) =>
  message.status !== 'failed' && !(message.direction === 'outbound' && (message.part === APOLOGY_PART || message.part === HOLDING_PART));

/** What one run did (also logged as `recent-backfill-done`). */
export interface BackfillReport {
  outcome: 'copied' | 'already-done' | 'busy';
  /** Conversation documents read. */
  scanned: number;
  /** Hot copies created. */
  copied: number;
  /** Active, but a hot copy existed already. */
  present: number;
  /** Left out: active with no message to copy, or unreadable. */
  skipped: number;
  /** Message documents read (every pass). */
  messages: number;
}

export interface RecentBackfillOptions {
  redis: RedisClient;
  conversations: Model<ConversationRecord>;
  messages: Model<MessageRecord>;
  /** The MongoDB database copied from (the marker is per database). */
  database: string;
  logger: Logger;
  now?: () => number;
}

export function createRecentBackfill(options: RecentBackfillOptions) {
  const { redis, conversations, messages, database, logger } = options;
  const now = options.now ?? Date.now;

  /** The last RECENT_MESSAGE_LIMIT messages (oldest first) of each of `chunk`'s conversations, in one pass over `messages`. */
  const lastMessages = async (chunk: ReadonlyMap<string, ActiveConversation>, counts: { messages: number }, signal: AbortSignal | undefined) => {
    const kept = new Map<string, StoredMessage[]>();
    const cursor = messages.collection.find(
      {},
      { batchSize: SCAN_BATCH, projection: { _id: 1, conversationId: 1, direction: 1, text: 1, status: 1, part: 1, createdAt: 1 } },
    );
    try {
      for await (const document of cursor) {
        if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('recent history copy stopped');
        counts.messages += 1;
        if (!chunk.has(String(document.conversationId))) continue;
        const parsed = StoredMessageSchema.safeParse(document);
        if (!parsed.success || !inHistory(parsed.data)) continue;
        const list = kept.get(parsed.data.conversationId) ?? [];
        list.push(parsed.data);
        // Trimmed now and then, not on every message: at most twice the limit held per conversation.
        if (list.length >= 2 * RECENT_MESSAGE_LIMIT) list.sort(byTranscriptOrder).splice(0, list.length - RECENT_MESSAGE_LIMIT);
        kept.set(parsed.data.conversationId, list);
      }
    } finally {
      await cursor.close();
    }
    for (const list of kept.values()) list.sort(byTranscriptOrder).splice(0, Math.max(0, list.length - RECENT_MESSAGE_LIMIT));
    return kept;
  };

  const copy = async (signal: AbortSignal | undefined): Promise<Omit<BackfillReport, 'outcome'>> => {
    const counts = { scanned: 0, copied: 0, present: 0, skipped: 0, messages: 0 };
    const since = now() - CONVERSATION_TTL_SECONDS * 1000;
    const active = new Map<string, ActiveConversation>();
    const cursor = conversations.collection.find({}, { batchSize: SCAN_BATCH, projection: { recent: 0 } });
    try {
      for await (const document of cursor) {
        if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('recent history copy stopped');
        counts.scanned += 1;
        const parsed = StoredConversationSchema.safeParse(document);
        if (!parsed.success) {
          counts.skipped += 1;
          logger.warn('recent-backfill-unreadable', { conversationKey: String(document._id) });
          continue;
        }
        const { _id, channel, address, displayName, createdAt, updatedAt } = parsed.data;
        const lastWrite = updatedAt?.getTime() ?? 0;
        if (lastWrite < since) continue;
        active.set(_id, { _id, channel, address, displayName: displayName ?? '', createdAt: createdAt ?? new Date(lastWrite), lastWrite });
      }
    } finally {
      await cursor.close();
    }
    const ids = [...active.keys()];
    for (let start = 0; start < ids.length; start += CONVERSATIONS_PER_PASS) {
      const chunk = new Map(ids.slice(start, start + CONVERSATIONS_PER_PASS).map((id) => [id, active.get(id) as ActiveConversation]));
      const histories = await lastMessages(chunk, counts, signal);
      for (const conversation of chunk.values()) {
        const history = histories.get(conversation._id) ?? [];
        if (history.length === 0) {
          counts.skipped += 1;
          continue;
        }
        const recent: RecentMessage[] = history.map(({ _id, direction, text }) => ({ id: _id, direction, text }));
        const customerAt = history
          .filter((message) => message.direction === 'inbound')
          .at(-1)
          ?.createdAt.getTime();
        // It lives as long as it would have since the conversation's last message.
        const lastWrite = Math.max(conversation.lastWrite, history.at(-1)?.createdAt.getTime() ?? 0);
        const ttl = Math.max(1, Math.ceil((lastWrite - since) / 1000));
        const created = await redis.eval(
          copyScript,
          1,
          transcriptKeys.conversation(conversation._id),
          conversation.channel,
          conversation.address,
          conversation.displayName,
          conversation.createdAt.toISOString(),
          JSON.stringify(recent),
          ttl,
          CUSTOMER_AT_FIELD,
          customerAt === undefined ? '' : String(customerAt),
        );
        if (created === 1) counts.copied += 1;
        else counts.present += 1;
      }
    }
    return counts;
  };

  return {
    /**
     * Copies once per Redis (and MongoDB database); returns what it did. `busy`: another process
     * is copying. Throws when MongoDB or Redis fails mid-way (the caller retries; what was copied stays).
     */
    async run(signal?: AbortSignal): Promise<BackfillReport> {
      const empty = { scanned: 0, copied: 0, present: 0, skipped: 0, messages: 0 };
      if ((await redis.get(backfillKeys.done(database))) !== null) return { outcome: 'already-done', ...empty };
      const token = `${process.pid}:${now()}:${Math.random().toString(36).slice(2)}`;
      if ((await redis.set(backfillKeys.lock(database), token, 'PX', LOCK_TTL_MS, 'NX')) !== 'OK') {
        logger.info('recent-backfill-busy', { database });
        return { outcome: 'busy', ...empty };
      }
      try {
        const started = now();
        const counts = await copy(signal);
        await redis.set(backfillKeys.done(database), new Date(now()).toISOString());
        logger.info('recent-backfill-done', { database, ...counts, ms: now() - started });
        return { outcome: 'copied', ...counts };
      } finally {
        await releaseLease(redis, backfillKeys.lock(database), token).catch(() => undefined);
      }
    },
  };
}
