/**
 * The knowledge's operations, shared by the admin API, the crawl schedule and the turn: wires
 * the sources (`service-sources.ts`), what an owner uploads (`service-uploads.ts`) and the
 * overview (`service-overview.ts`), and owns retrieval of passages for an audience and removal.
 */
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { RedisClient } from '../redis.js';
import type { CrawlLimits } from './crawler.js';
import type { Embedder } from './embeddings.js';
import type { WorkerIndexStatus } from './index-status.js';
import type { KnowledgeIndex } from './knowledge-index.js';
import type { KnowledgeLibrary } from './library.js';
import type { MissLog } from './misses.js';
import type { Audience, Passage } from './model.js';
import { knowledgeOverview } from './service-overview.js';
import { createSourceOperations } from './service-sources.js';
import { createUploads } from './service-uploads.js';
import type { KnowledgeStore } from './store.js';

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
  const { store, index, library, embedder } = dependencies;
  const { removeSource, ...sources } = createSourceOperations(dependencies);

  return {
    store,
    index,
    misses: dependencies.misses,
    ...createUploads(library),
    ...sources,

    async retrieve(query: string | readonly string[], audience: Audience, limit = 5): Promise<Passage[]> {
      if (!embedder || index.vectors() === 0) return index.search(query, audience, limit);
      const vector = await embedder.embedQuery(typeof query === 'string' ? query : query.join('\n'));
      return index.search(query, audience, limit, { vector });
    },

    async remove(kind: 'faq' | 'documents' | 'sources' | 'pages', id: string): Promise<boolean> {
      if (kind === 'sources') return removeSource(id);
      if (kind === 'pages') return id.startsWith('page:') && library.remove(id);
      const prefix = kind === 'faq' ? 'faq_' : 'doc_';
      if (!id.startsWith(prefix)) return false;
      return library.remove(`doc:${id}`);
    },

    overview: () => knowledgeOverview({ store, index, workers: dependencies.workers }),
  };
}
export type KnowledgeService = ReturnType<typeof createKnowledgeService>;
