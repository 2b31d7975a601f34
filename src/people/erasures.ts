/**
 * Erasures: a person's data removed from every store, recorded before anything is touched and
 * finished by any process after a crash. The record (MongoDB `erasures`, `_id` the erasure's id)
 * says who asked, when, and how many items each store held; while it runs it also holds the plan
 * (the conversation keys and identifiers to remove), which goes once it is done. A worker checks
 * for records still running every RESUME_EVERY_MS and takes one whose lease (Redis, renewed
 * between steps) lapsed. Every step is idempotent, so a resumed erasure runs them all again.
 * While it runs, the erasure holds each conversation's lock: a turn in flight finishes first (its
 * records are erased with the rest) and no turn starts meanwhile; a second pass after SETTLE_MS
 * takes what a transcript writer was carrying to MongoDB when the first one ran. A message the
 * person sends afterwards starts a new, empty conversation.
 */
import { randomUUID } from 'node:crypto';
import type { ConnectionOptions } from 'bullmq';
import type { Connection } from 'mongoose';
import type { ContactIndex } from '../contacts/contact-index.js';
import type { Logger } from '../logger.js';
import type { MediaStore } from '../media/media-store.js';
import { acquireConversationLock, type HeldLock } from '../queue/conversation-lock.js';
import { redisKeys } from '../queue/keys.js';
import { KEY_PREFIX, type RedisClient } from '../redis.js';
import { transcriptKeys } from '../store/transcript-keys.js';
import { eraseMongo, footprintOf, valuesOf } from './mongo-stores.js';
import { eraseQueues } from './queue-stores.js';
import { eraseRedis } from './redis-stores.js';
import { conversationTag } from '../reports/rollup-script.js';
import { isEmail, type Person } from './resolve.js';

const ERASURES_COLLECTION = 'erasures';
const LEASE_MS = 10_000;
const RESUME_EVERY_MS = 10_000;
const LOCK_WAIT_MS = 15_000;
const LOCK_TTL_MS = 30_000;

export interface ErasureRecord {
  _id: string;
  requestedBy: string;
  requestedAt: Date;
  status: 'running' | 'done';
  finishedAt?: Date;
  /** Items removed (or anonymised) per store: `mongo`, `redis`, `queues`, each by collection, key family or queue. */
  counts: Record<string, Record<string, number>>;
  /** While running: what to remove. */
  plan?: Person & { texts: string[] };
}

export interface ErasureDeps {
  connection: Connection;
  redis: RedisClient;
  bull: ConnectionOptions;
  queuePrefix: string;
  contacts: Pick<ContactIndex, 'remove' | 'conversations'>;
  media: Pick<MediaStore, 'remove'>;
  logger: Logger;
  /** The wait before the second pass (tests shorten it). */
  settleMs: number;
  /** Transcript links signed so far for the conversation stop working. */
  revokeLinks(conversationId: string): Promise<void>;
}

const leaseKey = (id: string) => `${KEY_PREFIX}:people:erasure-lease:{${id}}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Adds one pass's counts into the running totals. */
function merge(into: Record<string, Record<string, number>>, store: string, counts: Record<string, number>) {
  const target = (into[store] ??= {});
  for (const [name, count] of Object.entries(counts)) target[name] = (target[name] ?? 0) + count;
}

/** The total over every store. */
export const totalOf = (counts: ErasureRecord['counts']) =>
  Object.values(counts).reduce((sum, store) => sum + Object.values(store).reduce((a, b) => a + b, 0), 0);

/** The message ids the conversations' recent histories in Redis hold (an unreadable history adds none). */
async function recentMessageIds(redis: RedisClient, conversationKeys: readonly string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const key of conversationKeys) {
    try {
      const recent = JSON.parse((await redis.hget(transcriptKeys.conversation(key), 'recent')) ?? '[]') as { id?: unknown }[];
      for (const entry of recent) if (typeof entry.id === 'string') ids.push(entry.id);
    } catch {
      // Not JSON: nothing to add; the MongoDB footprint still names what was written.
    }
  }
  return ids;
}

/** Waits for each conversation's lock (a turn in flight ends first), renewing the erasure's lease; one never freed in time is taken over when it expires. */
async function lockAll(deps: Pick<ErasureDeps, 'redis' | 'logger'>, id: string, keys: readonly string[]): Promise<HeldLock[]> {
  const held: HeldLock[] = [];
  for (const key of keys) {
    const deadline = Date.now() + LOCK_WAIT_MS;
    for (;;) {
      const lock = await acquireConversationLock(deps.redis, key, LOCK_TTL_MS, () => undefined);
      if (lock) {
        held.push(lock);
        break;
      }
      if (Date.now() > deadline) {
        deps.logger.warn('erasure-lock-busy', {});
        break;
      }
      await deps.redis.pexpire(leaseKey(id), LEASE_MS);
      await sleep(50);
    }
  }
  return held;
}

export function createErasures(deps: ErasureDeps) {
  const records = () => deps.connection.collection<ErasureRecord>(ERASURES_COLLECTION);

  /** One pass over every store; its counts. */
  const pass = async (id: string, plan: NonNullable<ErasureRecord['plan']>) => {
    const footprint = await footprintOf(deps.connection, plan.conversationKeys, plan.visitorPrefixes);
    // A turn's messages may still be on their way to MongoDB: the recent history in Redis names them too
    // (a reply's ledger is keyed by the message it answers).
    footprint.messageIds = [...new Set([...footprint.messageIds, ...(await recentMessageIds(deps.redis, plan.conversationKeys))])];
    // The reports' day sets and waits hold a conversation by a digest anyone with the number can compute.
    const values = [...valuesOf(footprint, plan.visitorPrefixes), ...footprint.conversationKeys.map(conversationTag)];
    const counts: ErasureRecord['counts'] = {};
    const renew = () => deps.redis.pexpire(leaseKey(id), LEASE_MS);
    for (const key of footprint.conversationKeys) await deps.revokeLinks(key);
    merge(counts, 'queues', await eraseQueues(deps.redis, deps.bull, deps.queuePrefix, values));
    const names = [...values, ...footprint.mediaIds, ...plan.identifiers, ...plan.visitorPrefixes.map((prefix) => prefix.split(':')[2] ?? '')];
    const texts = plan.texts;
    // The contact first: its removal leaves index entries (write ordering marks) the Redis step then deletes.
    if (plan.contact && (await deps.contacts.remove(plan.contact.address))) merge(counts, 'mongo', { contacts: 1 });
    const locks = new Set(plan.conversationKeys.map((key) => redisKeys.lock(key)));
    await renew();
    merge(counts, 'redis', await eraseRedis(deps.redis, { names, values, texts }, deps.queuePrefix, id, locks));
    await renew();
    merge(counts, 'mongo', await eraseMongo(deps.connection, footprint, deps.media, id));
    const chatSets = [...plan.externalIds.map((externalId) => `user:${externalId}`), ...plan.identifiers.filter(isEmail).map((email) => `email:${email}`)];
    for (const identity of chatSets) merge(counts, 'redis', { 'user chats': await deps.contacts.conversations.forget(identity) });
    return counts;
  };

  /** Both passes, under the conversations' locks: freed before the erasure is recorded done (a lock's key names the conversation). */
  const erase = async (record: ErasureRecord, plan: NonNullable<ErasureRecord['plan']>): Promise<ErasureRecord['counts']> => {
    const locks = await lockAll(deps, record._id, plan.conversationKeys);
    try {
      // A resumed erasure adds to what the interrupted one counted.
      const counts: ErasureRecord['counts'] = structuredClone(record.counts ?? {});
      for (const [store, values] of Object.entries(await pass(record._id, plan))) merge(counts, store, values);
      await records().updateOne({ _id: record._id }, { $set: { counts } });
      await deps.redis.pexpire(leaseKey(record._id), LEASE_MS);
      await sleep(deps.settleMs);
      for (const [store, values] of Object.entries(await pass(record._id, plan))) merge(counts, store, values);
      return counts;
    } finally {
      for (const lock of locks) await lock.release().catch(() => undefined);
    }
  };

  /** Runs (or resumes) a recorded erasure to its end while holding its lease. */
  const run = async (record: ErasureRecord): Promise<ErasureRecord> => {
    const { plan } = record;
    if (!plan) return record;
    try {
      const counts = await erase(record, plan);
      const done = { status: 'done' as const, finishedAt: new Date(), counts };
      await records().updateOne({ _id: record._id }, { $set: done, $unset: { plan: 1 } });
      deps.logger.info('person-erased', { erasure: record._id, items: totalOf(counts) });
      return { _id: record._id, requestedBy: record.requestedBy, requestedAt: record.requestedAt, ...done };
    } finally {
      await deps.redis.del(leaseKey(record._id)).catch(() => undefined);
    }
  };

  const takeLease = async (id: string) => (await deps.redis.set(leaseKey(id), randomUUID(), 'PX', LEASE_MS, 'NX')) === 'OK';

  /** Every record still running whose lease lapsed, run to its end here. */
  const resume = async (): Promise<number> => {
    let resumed = 0;
    for (const record of await records().find({ status: 'running' }).toArray()) {
      if (!(await takeLease(record._id))) continue;
      deps.logger.info('erasure-resumed', { erasure: record._id });
      await run(record);
      resumed += 1;
    }
    return resumed;
  };

  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  return {
    /** Records the erasure of `person` (who asked, when, the plan), then runs it. */
    async erase(person: Person, texts: string[], requestedBy: string): Promise<ErasureRecord> {
      const record: ErasureRecord = {
        _id: `er_${randomUUID().replace(/-/g, '')}`,
        requestedBy,
        requestedAt: new Date(),
        status: 'running',
        counts: {},
        plan: { ...person, texts },
      };
      await records().insertOne(record);
      await takeLease(record._id);
      return run(record);
    },
    /** Records, newest first, without their plans. */
    async list(limit = 100): Promise<ErasureRecord[]> {
      return records()
        .find({}, { projection: { plan: 0 } })
        .sort({ requestedAt: -1 })
        .limit(limit)
        .toArray();
    },
    resume,
    /** Resumes what a crash left, now and every RESUME_EVERY_MS (a failure is logged and tried again). */
    start(): void {
      closed = false;
      // A failure after the process began to close (connections going) is not worth a warning.
      // Only once MongoDB is connected: a cursor asked of mongoose while it buffers fails outside any promise.
      const tick = () => {
        if (deps.connection.readyState !== 1) return; // 1: connected
        void resume().catch((error: unknown) => closed || deps.logger.warn('erasure-resume-failed', { error }));
      };
      tick();
      timer ??= setInterval(tick, RESUME_EVERY_MS);
      timer.unref();
    },
    close(): void {
      closed = true;
      clearInterval(timer);
      timer = undefined;
    },
  };
}
