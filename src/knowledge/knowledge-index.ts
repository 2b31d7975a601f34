/**
 * The in-process index one worker answers from: BM25 over each chunk's title, heading path and
 * text (`lexical-index.ts`, language-aware terms from `text-analysis.ts`), and, when chunks carry
 * embeddings, a vector ranking fused with it by reciprocal rank fusion; filtered by audience (a
 * source limited to some widget sites or to a channel). The chunks' own fields live in one array
 * by slot (no second copy inside a search engine), and their ids by owner, so an owner is replaced
 * or removed as a whole. Built from MongoDB at start and kept current by the change stream.
 */
import { languageOf, type Language } from '../words/language.js';
import { chunkVector } from './embeddings.js';
import { LexicalIndex, weighTerms } from './lexical-index.js';
import type { Audience, ChunkRecord, Passage } from './model.js';
import { ARABIC, coverage, planQuery, SURFACE } from './query-plan.js';
import { detectLanguage, isStopWord, significantWords, terms, words } from './text-analysis.js';
import { VectorIndex } from './vector-index.js';

const EVERYONE = '*';
/** Reciprocal rank fusion's constant (Cormack et al.). */
const RRF_K = 60;
/** How deep each ranking goes into the fusion. */
const FUSION_DEPTH = 50;
/** The least similarity a vector hit needs relative to the best one, to be fused at all. */
const RELATIVE_FLOOR = 0.85;

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

interface StoredChunk {
  id: string;
  title: string;
  headingPath: string[];
  url: string;
  text: string;
  scope: readonly string[];
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
  const minSimilarity = options.minSimilarity ?? 0.3;
  const closeSimilarity = options.closeSimilarity ?? 0.85;
  const lexical = new LexicalIndex();
  const vectors = new VectorIndex();
  const chunks: (StoredChunk | undefined)[] = [];
  const byOwner = new Map<string, number[]>();
  const languages = new Set<Language>(['en']);
  let count = 0;

  const removeOwner = async (owner: string) => {
    const slots = byOwner.get(owner);
    if (!slots) return;
    byOwner.delete(owner);
    for (const slot of slots) {
      lexical.remove(slot);
      vectors.clear(slot);
      chunks[slot] = undefined;
    }
    count -= slots.length;
  };

  const addChunk = (chunk: ChunkRecord): number => {
    const slot = lexical.allocate();
    const fields = [words(chunk.title), words(chunk.headingPath.join(' ')), words(chunk.text)] as const;
    const language = chunk.language ? languageOf(chunk.language) : detectLanguage(fields[2]);
    languages.add(language);
    const weighted = weighTerms([
      [terms(fields[0], language), 2],
      [terms(fields[1], language), 1.5],
      [terms(fields[2], language), 1],
    ]);
    for (const field of fields) for (const word of field) if (!isStopWord(word) && !ARABIC.test(word)) weighted.counts.set(SURFACE + word, 1);
    lexical.add(slot, weighted);
    const vector = options.embeddingModel && chunk.embeddingModel === options.embeddingModel ? chunkVector(chunk) : undefined;
    if (vector) vectors.set(slot, vector);
    chunks[slot] = {
      id: chunk._id,
      title: chunk.title,
      headingPath: chunk.headingPath,
      url: chunk.url,
      text: chunk.text,
      scope: chunk.sites.length > 0 ? chunk.sites : [EVERYONE],
    };
    return slot;
  };

  /** Passages the word rule finds relevant, best first: BM25 weighted by the share of the query they cover. */
  const lexicalRanking = (variants: string[][], inScope: (slot: number) => boolean, depth: number) => {
    const plan = planQuery(lexical, [...languages], variants);
    const { slots, scores, masks } = lexical.score(plan.entries);
    const ranked: { slot: number; score: number }[] = [];
    for (const slot of slots) {
      const score = scores[slot] ?? 0;
      const covered = coverage(plan, masks[slot] ?? 0);
      if (score > 0 && covered > 0 && covered >= minCoverage && inScope(slot)) ranked.push({ slot, score: score * covered });
    }
    lexical.reset(slots);
    return ranked.sort((a, b) => b.score - a.score).slice(0, depth);
  };

  /**
   * Lexical and vector rankings fused by reciprocal rank: a vector hit counts when it is within
   * `RELATIVE_FLOOR` of the best one and the word rule found it relevant too, or alone when it
   * is `closeSimilarity` close (so embeddings never turn a decline into a passage on their own).
   */
  const fuse = (ranked: { slot: number; score: number }[], vector: Float32Array, inScope: (slot: number) => boolean) => {
    const fused = new Map<number, number>();
    ranked.forEach(({ slot }, rank) => fused.set(slot, 1 / (RRF_K + rank + 1)));
    const hits = vectors.nearest(vector, FUSION_DEPTH, minSimilarity, inScope);
    const floor = (hits[0]?.similarity ?? 0) * RELATIVE_FLOOR;
    hits
      .filter(({ slot, similarity }) => similarity >= floor && (fused.has(slot) || similarity >= closeSimilarity))
      .forEach(({ slot }, rank) => fused.set(slot, (fused.get(slot) ?? 0) + 1 / (RRF_K + rank + 1)));
    return [...fused].map(([slot, score]) => ({ slot, score })).sort((a, b) => b.score - a.score);
  };

  return {
    async replaceOwner(owner, list) {
      await removeOwner(owner);
      if (list.length === 0) return;
      byOwner.set(owner, list.map(addChunk));
      count += list.length;
    },

    removeOwner,

    async load(source) {
      for (const owner of [...byOwner.keys()]) await removeOwner(owner);
      let loaded = 0;
      for await (const chunk of source) {
        const slots = byOwner.get(chunk.owner) ?? [];
        if (slots.length === 0) byOwner.set(chunk.owner, slots);
        slots.push(addChunk(chunk));
        count += 1;
        loaded += 1;
      }
      lexical.trim();
      return loaded;
    },

    async search(query, audience, limit, searchOptions = {}) {
      if (count === 0) return [];
      const variants = (typeof query === 'string' ? [query] : query).map(significantWords).filter((list) => list.length > 0);
      const scope = new Set([EVERYONE, ...(audience.site ? [audience.site] : []), ...(audience.channel ? [audience.channel] : [])]);
      const inScope = (slot: number) => chunks[slot]?.scope.some((entry) => scope.has(entry)) ?? false;
      const vector = searchOptions.vector;
      const depth = vector ? FUSION_DEPTH : limit;
      const ranked = variants.length > 0 ? lexicalRanking(variants, inScope, depth) : [];
      const best = vector && vectors.size() > 0 ? fuse(ranked, vector, inScope) : ranked;
      return best.slice(0, limit).flatMap(({ slot, score }) => {
        const chunk = chunks[slot];
        return chunk ? [{ chunkId: chunk.id, title: chunk.title, headingPath: chunk.headingPath, url: chunk.url, text: chunk.text, score }] : [];
      });
    },

    size: () => count,
    owners: () => byOwner.size,
    vectors: () => vectors.size(),
    unembeddedOwners: () =>
      options.embeddingModel ? [...byOwner].filter(([, slots]) => slots.some((slot) => !vectors.has(slot))).map(([owner]) => owner) : [],
  };
}
