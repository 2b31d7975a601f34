/**
 * The published set this process's turns read, kept current the way the knowledge index is
 * (`src/knowledge/changes.ts`): MongoDB is the record, a Redis stream (`asst:guidance:changes`,
 * one key, capped) makes a publish reach every process within seconds, and a periodic check
 * converges anyway. A change is announced after its version is written; a process follows the
 * stream from the entry it saw before its first read of MongoDB, so nothing falls in between.
 * Applying is always "read the newest version by its number" — idempotent, and one at a time, so
 * an older read never lands after a newer one; a missed or trimmed entry, or a Redis that lost
 * the stream, costs at most one check's period. Each process publishes the version it holds
 * (`GET /admin/guidance` → `workers`, and the `guidance_live_version` gauge).
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { z } from 'zod';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { duplicateRedis, KEY_PREFIX, type RedisClient } from '../redis.js';
import type { PublishedVersion } from './model.js';
import type { GuidanceStore } from './store.js';

const CHANGES_KEY = `${KEY_PREFIX}:guidance:changes`;
const STATUS_KEY = `${KEY_PREFIX}:guidance:workers`;
const MAX_ENTRIES = 1_000;
const BLOCK_MS = 2_000;
const STALE_CHECKS = 5;

const WorkerStatusSchema = z.object({ process: z.string(), version: z.number(), checkedAt: z.string() });
export type WorkerStatus = z.infer<typeof WorkerStatusSchema>;

export async function announcePublish(redis: RedisClient, version: number): Promise<void> {
  await redis.xadd(CHANGES_KEY, 'MAXLEN', '~', MAX_ENTRIES, '*', 'version', String(version));
}

export interface LiveGuidance {
  /** The version this process's turns read (undefined: none published, or not read yet). */
  current(): PublishedVersion | undefined;
  /** Reads MongoDB once, then follows the stream and checks every `everyMs`; resolves after the first read. */
  start(): Promise<void>;
  /** Reads the newest version now (after this process published one). */
  refresh(reason: string): Promise<void>;
  workers(): Promise<WorkerStatus[]>;
  close(): Promise<void>;
}

export function createLiveGuidance(dependencies: {
  store: GuidanceStore;
  redis: RedisClient;
  logger: Logger;
  metrics: Metrics;
  everyMs: number;
}): LiveGuidance {
  const { store, redis, logger, metrics } = dependencies;
  const processId = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  let current: PublishedVersion | undefined;
  let chain: Promise<unknown> = Promise.resolve();
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let reader: RedisClient | undefined;
  let loop: Promise<void> | undefined;

  const serial = (task: () => Promise<void>): Promise<void> => {
    const run = chain.then(task);
    chain = run.catch(() => undefined);
    return run;
  };

  const refresh = (reason: string) =>
    serial(async () => {
      const latest = await store.latest();
      if ((latest?.version ?? 0) !== (current?.version ?? 0)) {
        current = latest;
        logger.info('guidance-version-live', { version: latest?.version ?? 0, entries: latest?.entries.length ?? 0, reason });
      }
      const status: WorkerStatus = { process: processId, version: current?.version ?? 0, checkedAt: new Date().toISOString() };
      metrics.setGauge('guidance_live_version', status.version);
      await redis.hset(STATUS_KEY, processId, JSON.stringify(status));
    });

  const tryRefresh = (reason: string) =>
    refresh(reason).catch((error: unknown) => {
      logger.warn('guidance-refresh-failed', { reason, error });
    });

  const follow = async (from: string) => {
    let position = from;
    const stream = (reader = duplicateRedis(redis));
    while (!closed) {
      try {
        const batch = (await stream.xread('COUNT', 100, 'BLOCK', BLOCK_MS, 'STREAMS', CHANGES_KEY, position)) as [string, [string, string[]][]][] | null;
        const entries = batch?.[0]?.[1] ?? [];
        const last = entries.at(-1)?.[0];
        if (last === undefined) continue;
        position = last;
        await tryRefresh('change');
      } catch (error) {
        if (closed) break;
        logger.warn('guidance-follow-failed', { error });
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    }
  };

  return {
    current: () => current,
    refresh,
    async start() {
      const last = (await redis.xrevrange(CHANGES_KEY, '+', '-', 'COUNT', 1)) as [string, string[]][];
      await refresh('start');
      if (closed) return;
      loop = follow(last[0]?.[0] ?? '0-0');
      timer = setInterval(() => void tryRefresh('check'), dependencies.everyMs);
      timer.unref();
    },
    async workers() {
      const entries = await redis.hgetall(STATUS_KEY);
      const oldest = Date.now() - Math.max(STALE_CHECKS * dependencies.everyMs, 60_000);
      const out: WorkerStatus[] = [];
      for (const [field, value] of Object.entries(entries)) {
        let status: WorkerStatus | undefined;
        try {
          status = WorkerStatusSchema.parse(JSON.parse(value));
        } catch {
          status = undefined;
        }
        if (!status || Date.parse(status.checkedAt) < oldest) await redis.hdel(STATUS_KEY, field);
        else out.push(status);
      }
      return out.sort((a, b) => a.process.localeCompare(b.process));
    },
    async close() {
      closed = true;
      if (timer) clearInterval(timer);
      reader?.disconnect();
      await loop;
      await chain;
      await redis.hdel(STATUS_KEY, processId).catch(() => undefined);
    },
  };
}
