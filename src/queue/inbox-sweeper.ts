/**
 * The backstop against a stranded inbox. A message appended behind a held lock or a queued job
 * adds no job of its own, and the worker rescues the conversation of a job that fails for good
 * (turn-worker.ts); but a job can also vanish without failing (removed from the `/admin/queues`
 * dashboard, a queue cleaned or obliterated by hand), or its rescue can fail for as long as Redis
 * does. Then the conversation's messages wait in its inbox with nothing coming back to them.
 *
 * Every SWEEP_EVERY_MS one worker process (a Redis lock per round) walks the inbox keys of every
 * primary (SCAN: off the hot path, and inboxes are deleted once empty, so few exist) and adds a
 * job for each inbox whose head has waited longer than SWEEP_MIN_AGE_MS while nobody holds its
 * conversation's lock. A job added where one still exists costs one busy or drained run, never a
 * second answer (the inbox, lock and send ledger see to that).
 */
import { Cluster } from 'ioredis';
import { z } from 'zod';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { KEY_PREFIX, type RedisClient } from '../redis.js';
import { redisKeys } from './keys.js';
import type { TurnQueue } from './turn-queue.js';

/** How often an inbox is looked at (at most one process sweeps per round). */
const SWEEP_EVERY_MS = 60_000;
/** A head younger than this may still have its job on the way (an append's job is added right after it). */
const SWEEP_MIN_AGE_MS = 60_000;

const HeadSchema = z.object({ messageId: z.string().min(1), receivedAt: z.number() });
const sweepLockKey = `${KEY_PREFIX}:inbox-sweep:lock`;

export interface InboxSweeperOptions {
  redis: RedisClient;
  queue: TurnQueue;
  logger: Logger;
  metrics: Metrics;
  minAgeMs?: number;
  now?: () => number;
}

/** The conversation key inside an inbox key (`asst:inbox:{<conversation key>}`). */
function conversationOf(inboxKey: string): string | undefined {
  const prefix = `${KEY_PREFIX}:inbox:{`;
  return inboxKey.startsWith(prefix) && inboxKey.endsWith('}') ? inboxKey.slice(prefix.length, -1) : undefined;
}

export function createInboxSweeper(options: InboxSweeperOptions) {
  const { redis, queue, logger, metrics } = options;
  const now = options.now ?? Date.now;
  const minAgeMs = options.minAgeMs ?? SWEEP_MIN_AGE_MS;
  let timer: NodeJS.Timeout | undefined;

  /** Adds a job for the conversation if its inbox is stranded; true when it did. */
  const visit = async (conversationKey: string, round: number): Promise<boolean> => {
    const [lockResult, headResult] = (await redis.pipeline().exists(redisKeys.lock(conversationKey)).lindex(redisKeys.inbox(conversationKey), 0).exec()) ?? [];
    if (lockResult?.[0] || headResult?.[0] || lockResult?.[1] !== 0 || typeof headResult?.[1] !== 'string') return false;
    let json: unknown;
    try {
      json = JSON.parse(headResult[1]);
    } catch {
      json = undefined;
    }
    // An unreadable head is discarded by the job's drain; its age is unknown, so it is not waited on.
    const head = HeadSchema.safeParse(json);
    const age = head.success ? now() - head.data.receivedAt : minAgeMs;
    if (age < minAgeMs) return false;
    const messageId = head.success ? head.data.messageId : 'unreadable';
    const jobId = `sweep|${conversationKey}|${messageId}|${round}`.replace(/:/g, '_');
    await queue.add('turn', { conversationKey, messageId }, { jobId });
    metrics.increment('inbox_swept_total');
    logger.warn('inbox-swept', { conversationKey, messageId, waitedMs: age });
    return true;
  };

  return {
    /** One pass over every primary's inboxes; returns how many got a job. */
    async sweep(): Promise<number> {
      const round = Math.floor(now() / SWEEP_EVERY_MS);
      const servers = redis instanceof Cluster ? redis.nodes('master') : [redis];
      let added = 0;
      for (const server of servers) {
        let cursor = '0';
        do {
          const [next, keys] = await server.scan(cursor, 'MATCH', `${KEY_PREFIX}:inbox:*`, 'COUNT', 1000);
          cursor = next;
          for (const key of keys) {
            const conversationKey = conversationOf(key);
            if (conversationKey !== undefined && (await visit(conversationKey, round))) added += 1;
          }
        } while (cursor !== '0');
      }
      return added;
    },

    /** Sweeps every SWEEP_EVERY_MS in one process at a time; failures are logged, never thrown. */
    start(): void {
      if (timer) return;
      timer = setInterval(() => {
        void (async () => {
          if ((await redis.set(sweepLockKey, String(process.pid), 'PX', SWEEP_EVERY_MS - 1000, 'NX')) !== 'OK') return;
          await this.sweep();
        })().catch((error: unknown) => logger.error('inbox-sweep-failed', { error }));
      }, SWEEP_EVERY_MS);
      timer.unref();
    },

    stop(): void {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}
