/**
 * The knowledge's sources: add one (its id from its URL), crawl it under its Redis lock (crawls
 * of one source never overlap across processes), crawl it in the background, and remove it with
 * its pages — a running crawl of it is stopped first (`crawl-lock.ts`): the removal wins, and no
 * crawl writes the source back.
 */
import { createHash } from 'node:crypto';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { RedisClient } from '../redis.js';
import { createCrawlLocks } from './crawl-lock.js';
import { crawlSource, type CrawlLimits, type CrawlReport } from './crawler.js';
import type { KnowledgeLibrary } from './library.js';
import type { SourceInput, SourceRecord } from './model.js';
import type { KnowledgeStore } from './store.js';

/** How long removing a source waits, past one page's fetch, for its running crawl to stop. */
const STOP_MARGIN_MS = 5_000;

export function createSourceOperations(dependencies: {
  store: KnowledgeStore;
  library: KnowledgeLibrary;
  redis: RedisClient;
  limits: CrawlLimits;
  logger: Logger;
  metrics: Metrics;
}) {
  const { store, library, limits, logger, metrics } = dependencies;
  const locks = createCrawlLocks(dependencies.redis);

  const crawl = async (sourceId: string): Promise<CrawlReport | undefined> => {
    const token = await locks.take(sourceId);
    if (!token) return undefined;
    try {
      const source = await store.getSource(sourceId);
      if (!source) return undefined;
      const stopped = () => locks.stopped(sourceId, token);
      const report = await crawlSource(source, { store, library, limits, logger, stopped });
      metrics.increment('knowledge_crawls_total', { outcome: report.outcome });
      return report;
    } finally {
      await locks.release(sourceId, token);
    }
  };

  return {
    async addSource(input: SourceInput, origin: SourceRecord['origin']): Promise<SourceRecord> {
      const id = `src_${createHash('sha256').update(input.url).digest('hex').slice(0, 16)}`;
      const existing = await store.getSource(id);
      const source: SourceRecord = { ...input, _id: id, origin: existing?.origin ?? origin, pageIds: existing?.pageIds ?? [], errors: existing?.errors ?? [] };
      if (existing?.lastCrawlAt) source.lastCrawlAt = existing.lastCrawlAt;
      await store.putSource(source);
      return source;
    },

    crawl,

    crawlInBackground(sourceId: string): void {
      crawl(sourceId).catch((error: unknown) => {
        metrics.increment('knowledge_crawls_total', { outcome: 'failed' });
        logger.error('knowledge-crawl-failed', { sourceId, error });
      });
    },

    /** Removes a source and its pages, after stopping its running crawl. */
    async removeSource(id: string): Promise<boolean> {
      const token = await locks.stopAndTake(id, limits.timeoutMs + STOP_MARGIN_MS);
      try {
        const source = await store.getSource(id);
        if (!source) return false;
        await store.removeSource(id);
        for (const pageId of source.pageIds) await library.remove(pageId);
        return true;
      } finally {
        if (token) await locks.release(id, token);
      }
    },
  };
}
