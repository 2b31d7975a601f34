/**
 * Copies conversations' recent history from MongoDB into Redis once, so a deployment over
 * existing data keeps its conversations' context. A turn reads its history only from the Redis
 * hot copy (`transcript-keys.ts`) and never from MongoDB; the version before the hot path kept
 * that history in each MongoDB conversation document (`recent`), so after upgrading from it —
 * or when Redis lost its data — a conversation's next turn would start with no history.
 *
 * The copy runs in the background in every worker process once MongoDB answers (start-up never
 * waits for it, and turns go on meanwhile). A marker per MongoDB database in Redis says it is
 * done, so it runs once per Redis: a Redis that lost its data lost the marker too, and the next
 * worker start copies again. A lock keeps several processes from scanning at once (the others
 * skip it; a holder that died frees it after LOCK_TTL_MS, and the next worker start runs it).
 *
 * It reads the `conversations` collection in one streaming pass with no filter (FerretDB pushes
 * down only `_id` filters: anything else would scan the table anyway, so one pass is the
 * cheapest read) and keeps the documents updated within the hot copy's lifetime
 * (CONVERSATION_TTL_SECONDS). Its only other read is by `_id`. A document's history is copied
 * only where no hot copy exists (one script: a turn that already created one keeps it), and
 * only when it is current: since the hot path, MongoDB's `recent` is no longer written, so a
 * document updated (by a newer message) well after its newest recent entry was written holds a
 * history with a hole in it, and is left out.
 */
import { z } from 'zod';
import type { Model } from 'mongoose';
import type { Logger } from '../logger.js';
import { KEY_PREFIX, type RedisClient } from '../redis.js';
import { CONVERSATION_TTL_SECONDS, transcriptKeys } from './transcript-keys.js';
import type { ConversationRecord, MessageRecord } from './transcript-store.js';

/** How long one process may hold the copy before another may take it over. */
const LOCK_TTL_MS = 10 * 60 * 1000;
/** A document updated this long after its newest recent entry was written saw messages its history lacks. */
const STALE_AFTER_MS = 60 * 1000;
const SCAN_BATCH = 200;

/** The copy's own keys (single-key commands only: no hash tag needed). */
const backfillKeys = {
  done: (database: string) => `${KEY_PREFIX}:tx:backfill:done:${database}`,
  lock: (database: string) => `${KEY_PREFIX}:tx:backfill:lock:${database}`,
};

// KEYS: the conversation's hash. ARGV: channel, address, displayName ('' for none), createdAt, recent (JSON), ttl (s).
// Creates the hot copy only when there is none (a turn that created one keeps it). Returns 1 if created.
const copyScript = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'channel', ARGV[1], 'address', ARGV[2], 'createdAt', ARGV[4], 'recent', ARGV[5])
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'displayName', ARGV[3]) end
redis.call('EXPIRE', KEYS[1], ARGV[6])
return 1`;

const releaseScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/** A conversation document as any version stored it: what the copy needs, checked. */
const StoredConversationSchema = z.object({
  _id: z.string(),
  channel: z.string(),
  address: z.string(),
  displayName: z.string().optional().nullable(),
  recent: z.array(z.object({ id: z.string(), direction: z.enum(['inbound', 'outbound']), text: z.string() })).default([]),
  createdAt: z.date().optional(),
  updatedAt: z.date().optional(),
});

/** What one run did (also logged as `recent-backfill-done`). */
export interface BackfillReport {
  outcome: 'copied' | 'already-done' | 'busy';
  scanned: number;
  copied: number;
  /** A hot copy existed already. */
  present: number;
  /** Left out: history older than its newest messages, or unreadable. */
  stale: number;
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

  /** The newest recent entry that is a stored message (hand-back summaries are not), if any. */
  const newestMessageId = (recent: readonly { id: string }[]) => [...recent].reverse().find((entry) => /^(in|out):/.test(entry.id))?.id;

  /** Whether the document's history is as current as the document (no newer message it lacks). */
  const current = async (updatedAt: Date | undefined, recent: readonly { id: string }[]): Promise<boolean> => {
    const id = newestMessageId(recent);
    if (!id || !updatedAt) return false;
    const newest = await messages.findById(id, { createdAt: 1 }).lean().exec();
    if (!newest?.createdAt) return false;
    return updatedAt.getTime() - new Date(newest.createdAt).getTime() <= STALE_AFTER_MS;
  };

  const copy = async (signal: AbortSignal | undefined): Promise<Omit<BackfillReport, 'outcome'>> => {
    const counts = { scanned: 0, copied: 0, present: 0, stale: 0 };
    const since = now() - CONVERSATION_TTL_SECONDS * 1000;
    const cursor = conversations.collection.find({}, { batchSize: SCAN_BATCH });
    try {
      for await (const document of cursor) {
        if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('recent history copy stopped');
        counts.scanned += 1;
        const parsed = StoredConversationSchema.safeParse(document);
        if (!parsed.success) {
          counts.stale += 1;
          logger.warn('recent-backfill-unreadable', { conversationKey: String(document._id) });
          continue;
        }
        const { _id, channel, address, displayName, recent, createdAt, updatedAt } = parsed.data;
        const lastWrite = updatedAt?.getTime() ?? 0;
        if (recent.length === 0 || lastWrite < since) continue;
        if (!(await current(updatedAt, recent))) {
          counts.stale += 1;
          continue;
        }
        const ttl = Math.max(1, Math.ceil((lastWrite - since) / 1000));
        const created = await redis.eval(
          copyScript,
          1,
          transcriptKeys.conversation(_id),
          channel,
          address,
          displayName ?? '',
          (createdAt ?? updatedAt ?? new Date(lastWrite)).toISOString(),
          JSON.stringify(recent),
          ttl,
        );
        if (created === 1) counts.copied += 1;
        else counts.present += 1;
      }
    } finally {
      await cursor.close();
    }
    return counts;
  };

  return {
    /**
     * Copies once per Redis (and MongoDB database); returns what it did. `busy`: another process
     * is copying. Throws when MongoDB or Redis fails mid-way (the caller retries; what was copied stays).
     */
    async run(signal?: AbortSignal): Promise<BackfillReport> {
      const empty = { scanned: 0, copied: 0, present: 0, stale: 0 };
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
        await redis.eval(releaseScript, 1, backfillKeys.lock(database), token).catch(() => undefined);
      }
    },
  };
}
