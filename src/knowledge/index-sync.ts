/**
 * Keeping this process's index the store's. MongoDB is the record; the change stream only makes
 * a change reach the index fast. This module owns what makes the index converge anyway:
 *   - the version of this index (`held-owners.ts`) against the same digest over MongoDB's owner
 *     records;
 *   - the build at start (owner records first, then only the chunks they list: a chunk written
 *     by a writer that died before its owner was, never reaches the index);
 *   - resync: the owners whose hash differs from MongoDB's are read again (or dropped), one apply
 *     at a time with the change stream's; run when the follower reports a gap or a failed apply
 *     (retried until it succeeds), and by the periodic check, which also publishes this process's
 *     versions (`GET /admin/knowledge` → `workers`, and `knowledge_index_in_sync`).
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { z } from 'zod';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { KEY_PREFIX, type RedisClient } from '../redis.js';
import type { GapReason, KnowledgeChange } from './changes.js';
import type { KnowledgeIndex } from './knowledge-index.js';
import type { KnowledgeLibrary } from './library.js';
import type { KnowledgeStore } from './store.js';
import { ownersVersion, type HeldOwners } from './held-owners.js';

const STATUS_KEY = `${KEY_PREFIX}:knowledge:index-status`;
const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 30_000;
/** A process's published status older than this many checks is a process that is gone. */
const STALE_CHECKS = 5;

/** One process's index as its last check saw it: its version and the store's, compared. */
const WorkerIndexStatusSchema = z.object({
  process: z.string(),
  chunks: z.number(),
  owners: z.number(),
  version: z.string(),
  storeVersion: z.string(),
  inSync: z.boolean(),
  checkedAt: z.string(),
});
export type WorkerIndexStatus = z.infer<typeof WorkerIndexStatusSchema>;

const parseStatus = (value: string): WorkerIndexStatus | undefined => {
  try {
    return WorkerIndexStatusSchema.parse(JSON.parse(value));
  } catch {
    return undefined;
  }
};

export function createIndexSync(dependencies: {
  store: KnowledgeStore;
  index: KnowledgeIndex;
  library: KnowledgeLibrary;
  held: HeldOwners;
  redis: RedisClient;
  logger: Logger;
  metrics: Metrics;
  everyMs: number;
}) {
  const { store, index, library, held, redis, logger, metrics } = dependencies;
  const processId = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  let chain: Promise<unknown> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  let retry: NodeJS.Timeout | undefined;
  let closed = false;
  let retryMs = FIRST_RETRY_MS;

  /** One apply at a time (the stream's and resync's), so an older read never lands after a newer one. */
  const serial = <T>(task: () => Promise<T>): Promise<T> => {
    const run = chain.then(task);
    chain = run.catch(() => undefined);
    return run;
  };

  /** Applies what differs from MongoDB's owners; returns the store's version read and how many owners differed. */
  const resync = (reason: string) =>
    serial(async () => {
      const stored = await store.ownerHashes();
      const mine = new Map(held.entries());
      const differing = [...stored].filter(([owner, { hash }]) => mine.get(owner) !== hash).map(([owner]) => owner);
      const extra = [...mine.keys()].filter((owner) => !stored.has(owner));
      for (const owner of differing) await library.apply({ op: 'upsert', owner });
      for (const owner of extra) await library.apply({ op: 'delete', owner });
      const behind = differing.length + extra.length;
      if (behind > 0) {
        metrics.increment('knowledge_index_resyncs_total', { reason });
        logger.warn('knowledge-index-resynced', { reason, owners: behind });
      }
      return { storeVersion: ownersVersion([...stored].map(([owner, { hash }]) => [owner, hash] as const)), behind };
    });

  const publish = async (storeVersion: string) => {
    const version = held.version();
    const status: WorkerIndexStatus = {
      process: processId,
      chunks: index.size(),
      owners: index.owners(),
      version,
      storeVersion,
      inSync: version === storeVersion,
      checkedAt: new Date().toISOString(),
    };
    metrics.setGauge('knowledge_index_in_sync', status.inSync ? 1 : 0);
    await redis.hset(STATUS_KEY, processId, JSON.stringify(status));
  };

  const check = async () => {
    const first = await resync('check');
    // Owners read again just now may be newer than the store's version read before them: compare once more.
    const { storeVersion } = first.behind > 0 ? await resync('check') : first;
    await publish(storeVersion);
  };

  /** A resync now, tried again with a growing pause until it succeeds (MongoDB may be what failed). */
  const requestResync = (reason: GapReason) => {
    if (closed || retry) return;
    const attempt = () => {
      retry = undefined;
      resync(reason)
        .then(() => (retryMs = FIRST_RETRY_MS))
        .catch((error: unknown) => {
          logger.warn('knowledge-index-resync-failed', { reason, retryInMs: retryMs, error });
          if (closed) return;
          retry = setTimeout(attempt, retryMs);
          retry.unref();
          retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
        });
    };
    retry = setTimeout(attempt, 0);
    retry.unref();
  };

  return {
    /** The follower's apply: serialised with resync. */
    apply: (change: KnowledgeChange) => serial(() => library.apply(change)),

    requestResync,

    /** Builds the index from MongoDB: the owner records, then only the chunks they list. Returns the chunk count. */
    async build(): Promise<number> {
      const owners = await store.ownerHashes();
      const listed = new Set<string>();
      for (const { chunkIds } of owners.values()) for (const id of chunkIds) listed.add(id);
      const count = await index.load(
        (async function* listedChunks() {
          for await (const chunk of store.allChunks()) if (listed.has(chunk._id)) yield chunk;
        })(),
      );
      held.reset([...owners].map(([owner, { hash }]) => [owner, hash] as const));
      return count;
    },

    /** Starts the periodic check (every `everyMs`). */
    start(): void {
      const tick = () =>
        void check().catch((error: unknown) => {
          metrics.setGauge('knowledge_index_in_sync', 0);
          logger.warn('knowledge-index-check-failed', { error });
        });
      timer = setInterval(tick, dependencies.everyMs);
      timer.unref();
      tick();
    },

    /** Every process's last published status; those gone quiet are dropped. */
    async workers(): Promise<WorkerIndexStatus[]> {
      const entries = await redis.hgetall(STATUS_KEY);
      const oldest = Date.now() - Math.max(STALE_CHECKS * dependencies.everyMs, 60_000);
      const out: WorkerIndexStatus[] = [];
      for (const [field, value] of Object.entries(entries)) {
        const status = parseStatus(value);
        if (!status || Date.parse(status.checkedAt) < oldest) await redis.hdel(STATUS_KEY, field);
        else out.push(status);
      }
      return out.sort((a, b) => a.process.localeCompare(b.process));
    },

    async close(): Promise<void> {
      closed = true;
      if (timer) clearInterval(timer);
      if (retry) clearTimeout(retry);
      await chain;
      await redis.hdel(STATUS_KEY, processId).catch(() => undefined);
    },
  };
}
export type IndexSync = ReturnType<typeof createIndexSync>;
