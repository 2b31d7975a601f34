/**
 * The knowledge at a glance for `/admin/knowledge`: this process's index size, every process's
 * index status, the sources with their last crawl, and the documents and pages stored.
 */
import type { WorkerIndexStatus } from './index-status.js';
import type { KnowledgeIndex } from './knowledge-index.js';
import type { OwnerRecord } from './model.js';
import type { KnowledgeStore } from './store.js';

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

export async function knowledgeOverview({
  store,
  index,
  workers,
}: {
  store: KnowledgeStore;
  index: KnowledgeIndex;
  workers?: (() => Promise<WorkerIndexStatus[]>) | undefined;
}) {
  const [sources, documents, pages, statuses] = await Promise.all([
    store.listSources(),
    store.listOwners('documents'),
    store.listOwners('pages'),
    workers?.() ?? [],
  ]);
  return {
    index: { chunks: index.size(), owners: index.owners() },
    workers: statuses,
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
}
