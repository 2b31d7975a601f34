/**
 * The in-process index one worker answers from: BM25 over each chunk's title, heading path and
 * text (`lexical-index.ts`, language-aware terms from `text-analysis.ts`), and, when chunks carry
 * embeddings, a vector ranking fused with it by reciprocal rank fusion; filtered by audience (a
 * source limited to some widget sites or to a channel). The chunks live by slot
 * (`index-slots.ts`), the rankings and their fusion are `index-ranking.ts`; this module owns the
 * search. Built from MongoDB at start and kept current by the change stream.
 */
import { FUSION_DEPTH, fuseRankings, lexicalRanking } from './index-ranking.js';
import { createIndexSlots, EVERYONE } from './index-slots.js';
import type { Audience, ChunkRecord, Passage } from './model.js';
import { significantWords } from './text-analysis.js';

export interface SearchOptions {
  /** The query's embedding: adds the vector ranking (fused with BM25). */
  vector?: Float32Array | undefined;
}

export interface KnowledgeIndex {
  replaceOwner(owner: string, chunks: readonly ChunkRecord[]): Promise<void>;
  removeOwner(owner: string): Promise<void>;
  /**
   * Fills the index from every stored chunk, one at a time (so a worker never holds the whole
   * store's records at once), after emptying it (a retried build starts over). Returns the count.
   */
  load(chunks: AsyncIterable<ChunkRecord>): Promise<number>;
  /**
   * Passages relevant to the query for this audience, best first; empty when nothing relevant.
   * `query` may hold variants (the judge's terms, the customer's words): a passage is relevant
   * when it mentions at least `minCoverage` of one variant's significant words, or (with a query
   * vector) its embedding is at least `minSimilarity` close to the query's.
   */
  search(query: string | readonly string[], audience: Audience, limit: number, options?: SearchOptions): Promise<Passage[]>;
  size(): number;
  owners(): number;
  /** Chunks holding an embedding. */
  vectors(): number;
  /** Owners with a chunk lacking an embedding of the configured model (none without one). */
  unembeddedOwners(): string[];
}

export async function createKnowledgeIndex(
  options: {
    /** The share of a query's weight (by rarity) a passage must mention to be relevant (0: any one word). */
    minCoverage?: number;
    /** The least cosine a vector hit needs (below: not relevant). */
    minSimilarity?: number;
    /** The cosine at which a vector hit is relevant even when the word rule rejects it (calibrated per model). */
    closeSimilarity?: number;
    /** MODEL_EMBEDDING's label: only vectors it made are held (none without it). */
    embeddingModel?: string | undefined;
  } = {},
): Promise<KnowledgeIndex> {
  const minCoverage = options.minCoverage ?? 0.45;
  const similarity = { minSimilarity: options.minSimilarity ?? 0.3, closeSimilarity: options.closeSimilarity ?? 0.85 };
  const slots = createIndexSlots(options.embeddingModel);

  return {
    replaceOwner: slots.replaceOwner,
    removeOwner: slots.removeOwner,
    load: slots.load,

    async search(query, audience, limit, searchOptions = {}) {
      if (slots.count() === 0) return [];
      const variants = (typeof query === 'string' ? [query] : query).map(significantWords).filter((list) => list.length > 0);
      const scope = new Set([EVERYONE, ...(audience.site ? [audience.site] : []), ...(audience.channel ? [audience.channel] : [])]);
      const inScope = (slot: number) => slots.chunk(slot)?.scope.some((entry) => scope.has(entry)) ?? false;
      const vector = searchOptions.vector;
      const depth = vector ? FUSION_DEPTH : limit;
      const ranked = variants.length > 0 ? lexicalRanking(slots, variants, inScope, depth, minCoverage) : [];
      const best = vector && slots.vectors.size() > 0 ? fuseRankings(slots, ranked, vector, inScope, similarity) : ranked;
      return best.slice(0, limit).flatMap(({ slot, score }) => {
        const chunk = slots.chunk(slot);
        return chunk ? [{ chunkId: chunk.id, title: chunk.title, headingPath: chunk.headingPath, url: chunk.url, text: chunk.text, score }] : [];
      });
    },

    size: slots.count,
    owners: slots.owners,
    vectors: () => slots.vectors.size(),
    unembeddedOwners: slots.unembeddedOwners,
  };
}
