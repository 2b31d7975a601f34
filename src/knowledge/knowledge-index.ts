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
import { LexicalIndex, MAX_QUERY_TERMS, weighTerms } from './lexical-index.js';
import type { Audience, ChunkRecord, Passage } from './model.js';
import { detectLanguage, isStopWord, significantWords, stem, terms, words } from './text-analysis.js';
import { VectorIndex } from './vector-index.js';

const EVERYONE = '*';
/** Reciprocal rank fusion's constant (Cormack et al.). */
const RRF_K = 60;
/** How deep each ranking goes into the fusion. */
const FUSION_DEPTH = 50;
/** Index terms a query word's prefix may stand for, and their weight against an exact match. */
const PREFIX_EXPANSIONS = 8;
const PREFIX_WEIGHT = 0.6;
/**
 * Each passage's words are indexed as written too (folded, under this mark), for relevance only:
 * a query word counts as mentioned when a word of the passage begins with it (less its last two
 * letters when it is longer than five: "returns" → "retur"), as a person would read it; a stem
 * alone would let "cards" be found in "your card" of a refunds page. Arabic words, whose articles
 * and prepositions are joined to them, count by their stem.
 */
const SURFACE = '\u0001';
const SURFACE_EXPANSIONS = 64;
const SURFACE_BIT = 16;
const MAX_WORDS = MAX_QUERY_TERMS - SURFACE_BIT;
const ARABIC = /[\u0600-\u06ff]/;

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

const popcount = (value: number) => {
  let bits = value - ((value >>> 1) & 0x55555555);
  bits = (bits & 0x33333333) + ((bits >>> 2) & 0x33333333);
  return (((bits + (bits >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
};

export async function createKnowledgeIndex(
  options: {
    minCoverage?: number;
    /** The least cosine a vector hit needs (below: not relevant). */
    minSimilarity?: number;
    /** MODEL_EMBEDDING's label: only vectors it made are held (none without it). */
    embeddingModel?: string | undefined;
  } = {},
): Promise<KnowledgeIndex> {
  const minCoverage = options.minCoverage ?? 0.5;
  const minSimilarity = options.minSimilarity ?? 0.3;
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

  /** Each query word's index terms: its stem in every language the index holds, then what its shortest stem begins. */
  const alternatives = (word: string): [string, number][] => {
    const exact = [...new Set([...languages].map((language) => stem(word, language)))];
    const out: [string, number][] = exact.map((term) => [term, 1]);
    const shortest = exact.reduce((a, b) => (b.length < a.length ? b : a));
    if (shortest.length >= 4) for (const term of lexical.expand(shortest, PREFIX_EXPANSIONS)) if (!exact.includes(term)) out.push([term, PREFIX_WEIGHT]);
    return out;
  };

  /** The passage words a query word is mentioned by (see SURFACE). */
  const mentions = (word: string): [string, number][] => {
    if (ARABIC.test(word)) return [];
    const prefix = word.length > 5 ? word.slice(0, -2) : word;
    const found = new Set([SURFACE + word, ...lexical.expand(SURFACE + word, SURFACE_EXPANSIONS), ...lexical.expand(SURFACE + prefix, SURFACE_EXPANSIONS)]);
    return [...found].map((term) => [term, 0]);
  };

  const lexicalRanking = (variants: string[][], inScope: (slot: number) => boolean, depth: number) => {
    const distinct = [...new Set(variants.flat())].slice(0, MAX_WORDS);
    const bit = new Map(distinct.map((word, at) => [word, at]));
    const arabic = distinct.reduce((sum, word, at) => (ARABIC.test(word) ? sum | (1 << at) : sum), 0);
    const needs = variants.map((list) => {
      const mask = list.reduce((sum, word) => {
        const at = bit.get(word);
        return at === undefined ? sum : sum | (1 << at);
      }, 0);
      return { mask, least: Math.max(1, Math.ceil(popcount(mask) * minCoverage)) };
    });
    const query = [...distinct.map(alternatives), ...Array.from({ length: SURFACE_BIT - distinct.length }, () => []), ...distinct.map(mentions)];
    const { slots, scores, masks } = lexical.score(query);
    const ranked: { slot: number; score: number }[] = [];
    for (const slot of slots) {
      const mask = masks[slot] ?? 0;
      const score = scores[slot] ?? 0;
      const mentioned = ((mask >>> SURFACE_BIT) | (mask & arabic)) & 0xffff;
      if (score > 0 && needs.some((need) => need.mask !== 0 && popcount(mentioned & need.mask) >= need.least) && inScope(slot)) ranked.push({ slot, score });
    }
    lexical.reset(slots);
    return ranked.sort((a, b) => b.score - a.score).slice(0, depth);
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
      let best: { slot: number; score: number }[] = ranked;
      if (vector && vectors.size() > 0) {
        const fused = new Map<number, number>();
        ranked.forEach(({ slot }, rank) => fused.set(slot, 1 / (RRF_K + rank + 1)));
        vectors
          .nearest(vector, FUSION_DEPTH, minSimilarity, inScope)
          .forEach(({ slot }, rank) => fused.set(slot, (fused.get(slot) ?? 0) + 1 / (RRF_K + rank + 1)));
        best = [...fused].map(([slot, score]) => ({ slot, score })).sort((a, b) => b.score - a.score);
      }
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
