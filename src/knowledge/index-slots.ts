/**
 * The index's contents by slot: each chunk's own fields in one array (no second copy inside a
 * search engine), its BM25 terms (`lexical-index.ts`, language-aware from `text-analysis.ts`) and
 * its embedding (`vector-index.ts`, only one the configured model made), and the slots by owner,
 * so an owner is replaced or removed as a whole.
 */
import { languageOf, type Language } from '../words/language.js';
import { chunkVector } from './embeddings.js';
import { LexicalIndex, weighTerms } from './lexical-index.js';
import type { ChunkRecord } from './model.js';
import { ARABIC, SURFACE } from './query-plan.js';
import { detectLanguage, isStopWord, terms, words } from './text-analysis.js';
import { VectorIndex } from './vector-index.js';

/** A chunk's scope entry seen by every audience. */
export const EVERYONE = '*';

interface StoredChunk {
  id: string;
  title: string;
  headingPath: string[];
  url: string;
  text: string;
  scope: readonly string[];
}

export function createIndexSlots(embeddingModel: string | undefined) {
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
    const vector = embeddingModel && chunk.embeddingModel === embeddingModel ? chunkVector(chunk) : undefined;
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

  return {
    lexical,
    vectors,
    languages,
    chunk: (slot: number) => chunks[slot],
    count: () => count,
    owners: () => byOwner.size,
    removeOwner,

    async replaceOwner(owner: string, list: readonly ChunkRecord[]) {
      await removeOwner(owner);
      if (list.length === 0) return;
      byOwner.set(owner, list.map(addChunk));
      count += list.length;
    },

    async load(source: AsyncIterable<ChunkRecord>) {
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

    unembeddedOwners: () => (embeddingModel ? [...byOwner].filter(([, slots]) => slots.some((slot) => !vectors.has(slot))).map(([owner]) => owner) : []),
  };
}
export type IndexSlots = ReturnType<typeof createIndexSlots>;
