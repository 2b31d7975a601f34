/**
 * Keeping this process's index the store's. MongoDB is the record; the change stream only makes
 * a change reach the index fast. This module owns what makes the index converge anyway:
 *   - the version of this index (`held-owners.ts`) against the same digest over MongoDB's owner
 *     records;
 *   - the build at start (owner records first, then only the chunks they list: a chunk written
 *     by a writer that died before its owner was, never reaches the index);
 *   - resync (`index-resync.ts`): the owners whose hash differs from MongoDB's are read again (or
 *     dropped), one apply at a time with the change stream's; run when the follower reports a gap
 *     or a failed apply (retried until it succeeds), and by the periodic check, which also
 *     publishes this process's versions (`index-status.ts`: `GET /admin/knowledge` → `workers`,
 *     and `knowledge_index_in_sync`).
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { RedisClient } from '../redis.js';
import type { KnowledgeChange } from './changes.js';
import type { HeldOwners } from './held-owners.js';
import { createIndexStatuses, type WorkerIndexStatus } from './index-status.js';
import { createResync } from './index-resync.js';
import type { KnowledgeIndex } from './knowledge-index.js';
import type { KnowledgeLibrary } from './library.js';
import type { KnowledgeStore } from './store.js';

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
  const { store, index, library, held, logger, metrics } = dependencies;
  const processId = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const statuses = createIndexStatuses(dependencies.redis, dependencies.everyMs);
  const { serial, resync, requestResync, close: closeResync } = createResync(dependencies);
  let timer: NodeJS.Timeout | undefined;

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
    await statuses.publish(status);
  };

  const check = async () => {
    const first = await resync('check');
    // Owners read again just now may be newer than the store's version read before them: compare once more.
    const { storeVersion } = first.behind > 0 ? await resync('check') : first;
    await publish(storeVersion);
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
    workers: () => statuses.workers(),

    async close(): Promise<void> {
      if (timer) clearInterval(timer);
      await closeResync();
      await statuses.forget(processId);
    },
  };
}
export type IndexSync = ReturnType<typeof createIndexSync>;
