/**
 * The index's applies, one at a time (the change stream's and resync's, so an older read never
 * lands after a newer one), and resync: the owners whose hash differs from MongoDB's are read
 * again (or dropped); requested after a gap or a failed apply, it is tried again with a growing
 * pause until it succeeds (MongoDB may be what failed).
 */
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { GapReason } from './changes.js';
import { ownersVersion, type HeldOwners } from './held-owners.js';
import type { KnowledgeLibrary } from './library.js';
import type { KnowledgeStore } from './store.js';

const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 30_000;

export function createResync(dependencies: { store: KnowledgeStore; library: KnowledgeLibrary; held: HeldOwners; logger: Logger; metrics: Metrics }) {
  const { store, library, held, logger, metrics } = dependencies;
  let chain: Promise<unknown> = Promise.resolve();
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
    serial,
    resync,
    requestResync,
    /** Stops retrying and waits for the apply under way. */
    async close(): Promise<void> {
      closed = true;
      if (retry) clearTimeout(retry);
      await chain;
    },
  };
}
