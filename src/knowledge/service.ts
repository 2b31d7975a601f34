/**
 * The knowledge's operations, shared by the admin API, the crawl schedule and the turn: add FAQ
 * entries and documents, add/crawl/remove sources, list everything, and retrieve passages for
 * an audience. Crawls of one source never overlap across processes (a Redis lock per source).
 */
import { createHash } from 'node:crypto';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { MediaRejectedError } from '../media/content-check.js';
import type { RedisClient } from '../redis.js';
import { createCrawlLocks, type CrawlLocks } from './crawl-lock.js';
import { crawlSource, type CrawlLimits, type CrawlReport } from './crawler.js';
import { checkDocument } from './extract.js';
import { readHtml, readPdf } from './extract-guard.js';
import type { Embedder } from './embeddings.js';
import type { WorkerIndexStatus } from './index-sync.js';
import type { KnowledgeIndex } from './knowledge-index.js';
import { newId, type KnowledgeLibrary } from './library.js';
import type { MissLog } from './misses.js';
import type { Audience, OwnerRecord, Passage, SourceInput, SourceRecord } from './model.js';
import type { KnowledgeStore } from './store.js';

/** How long removing a source waits, past one page's fetch, for its running crawl to stop. */
const STOP_MARGIN_MS = 5_000;

/**
 * Removes a source and its pages. A running crawl of it is stopped first (`crawl-lock.ts`): the
 * removal wins, and no crawl writes the source back.
 */
async function removeSource(
  id: string,
  { store, library, locks, waitMs }: { store: KnowledgeStore; library: KnowledgeLibrary; locks: CrawlLocks; waitMs: number },
): Promise<boolean> {
  const token = await locks.stopAndTake(id, waitMs);
  try {
    const source = await store.getSource(id);
    if (!source) return false;
    await store.removeSource(id);
    for (const pageId of source.pageIds) await library.remove(pageId);
    return true;
  } finally {
    if (token) await locks.release(id, token);
  }
}

export interface DocumentUpload {
  bytes: Uint8Array;
  contentType: string;
  title?: string | undefined;
  filename?: string | undefined;
  url?: string | undefined;
  sites?: string[] | undefined;
}

export function createKnowledgeService(dependencies: {
  store: KnowledgeStore;
  index: KnowledgeIndex;
  library: KnowledgeLibrary;
  misses: MissLog;
  redis: RedisClient;
  limits: CrawlLimits;
  logger: Logger;
  metrics: Metrics;
  /** MODEL_EMBEDDING: the query is embedded (one request) and the vector ranking fused with BM25. */
  embedder?: Embedder | undefined;
  /** Every process's index against the store, as each last checked it. */
  workers?: () => Promise<WorkerIndexStatus[]>;
}) {
  const { store, index, library, redis, logger, metrics, embedder } = dependencies;
  const ownerView = (owner: OwnerRecord) => ({
    id: owner._id.replace(/^doc:/, ''),
    kind: owner.kind,
    title: owner.title,
    url: owner.url || undefined,
    chunks: owner.chunkIds.length,
    sites: owner.sites,
    updatedAt: owner.updatedAt,
    ...(owner.sourceId ? { sourceId: owner.sourceId } : {}),
  });

  const locks = createCrawlLocks(redis);
  const crawl = async (sourceId: string): Promise<CrawlReport | undefined> => {
    const token = await locks.take(sourceId);
    if (!token) return undefined;
    try {
      const source = await store.getSource(sourceId);
      if (!source) return undefined;
      const stopped = () => locks.stopped(sourceId, token);
      const report = await crawlSource(source, { store, library, limits: dependencies.limits, logger, stopped });
      metrics.increment('knowledge_crawls_total', { outcome: report.outcome });
      return report;
    } finally {
      await locks.release(sourceId, token);
    }
  };

  return {
    store,
    index,
    misses: dependencies.misses,

    async retrieve(query: string | readonly string[], audience: Audience, limit = 5): Promise<Passage[]> {
      if (!embedder || index.vectors() === 0) return index.search(query, audience, limit);
      const vector = await embedder.embedQuery(typeof query === 'string' ? query : query.join('\n'));
      return index.search(query, audience, limit, { vector });
    },

    async addFaq(entries: readonly { question: string; answer: string; url?: string | undefined; sites?: string[] | undefined }[]) {
      const added: { id: string; chunks: number; dropped: number }[] = [];
      for (const entry of entries) {
        const id = newId('faq');
        const result = await library.put({
          ownerId: `doc:${id}`,
          kind: 'faq',
          title: entry.question,
          url: entry.url ?? '',
          text: `# ${entry.question}\n\n${entry.answer}`,
          sites: entry.sites ?? [],
        });
        added.push({ id, chunks: result.chunks, dropped: result.dropped });
      }
      return added;
    },

    async addDocument(upload: DocumentUpload) {
      const checked = checkDocument(upload.contentType, upload.bytes);
      let text = checked.text ?? '';
      let title = upload.title ?? upload.filename ?? 'Document';
      if (checked.kind === 'pdf') text = (await readPdf(upload.bytes)).text;
      if (checked.kind === 'html') {
        const page = await readHtml(text, upload.url ?? 'https://document.invalid/');
        text = page.text;
        title = upload.title ?? (page.title || title);
      }
      if (!text.trim()) throw new MediaRejectedError('unreadable', 'the document holds no text');
      const id = newId('doc');
      const result = await library.put({
        ownerId: `doc:${id}`,
        kind: 'document',
        title,
        url: upload.url ?? '',
        text,
        sites: upload.sites ?? [],
        extra: { bytes: upload.bytes.length, contentType: upload.contentType },
      });
      return { id, kind: checked.kind, chunks: result.chunks, dropped: result.dropped };
    },

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

    async remove(kind: 'faq' | 'documents' | 'sources' | 'pages', id: string): Promise<boolean> {
      if (kind === 'sources') return removeSource(id, { store, library, locks, waitMs: dependencies.limits.timeoutMs + STOP_MARGIN_MS });
      if (kind === 'pages') return id.startsWith('page:') && library.remove(id);
      const prefix = kind === 'faq' ? 'faq_' : 'doc_';
      if (!id.startsWith(prefix)) return false;
      return library.remove(`doc:${id}`);
    },

    async overview() {
      const [sources, documents, pages, workers] = await Promise.all([
        store.listSources(),
        store.listOwners('documents'),
        store.listOwners('pages'),
        dependencies.workers?.() ?? [],
      ]);
      return {
        index: { chunks: index.size(), owners: index.owners() },
        workers,
        sources: sources.map((source) => ({
          id: source._id,
          url: source.url,
          origin: source.origin,
          sites: source.sites ?? [],
          pages: source.pageIds.length,
          lastCrawlAt: source.lastCrawlAt,
          lastCrawl: source.lastCrawlOutcome,
          errors: source.errors,
        })),
        documents: documents.map(ownerView),
        pages: pages.map(ownerView),
      };
    },
  };
}
export type KnowledgeService = ReturnType<typeof createKnowledgeService>;
