/**
 * The in-process index one worker answers from: Orama's BM25 over each chunk's title, heading
 * path and text, filtered by audience (a source limited to some widget sites or to a channel).
 * The chunks themselves are kept in a map beside it, by owner, so an owner is replaced or
 * removed as a whole. Built from MongoDB at start and kept current by the change stream.
 */
import { create, insertMultiple, remove, search, type AnyOrama } from '@orama/orama';
import type { Audience, ChunkRecord, Passage } from './model.js';

const EVERYONE = '*';

/** Words that say nothing about which passage answers (the six languages' commonest). */
const STOP_WORDS = new Set(
  (
    'the a an and or of to in on for with is are be do does did can could would should my your our you we i it its this that what how when where who why which ' +
    'have has had will from at by about as me us not any there their them they was were long much many get ' +
    'el la los las un una y o de del en con por para es son que como cuando donde mi su tu se lo al ' +
    'le les des du et ou en dans pour avec est sont que qui comment quand mon ma mes votre vos je il elle ' +
    'der die das ein eine und oder von zu im in mit für ist sind wie wann wo mein meine ich sie es den dem ' +
    'o os as um uma e ou do da dos das em no na com para é são como quando onde meu minha'
  ).split(/\s+/),
);

/** The words of a query that can tell passages apart (lower case, accents kept). */
function significantTerms(query: string): string[] {
  const words = query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return [...new Set(words.filter((word) => (word.length >= 3 || /\d/.test(word)) && !STOP_WORDS.has(word)))];
}

/** A term is in a text when a word starts with it (or with its stem-ish first part: "returns" → "return"). */
function mentionPattern(term: string): RegExp {
  const stem = term.length > 5 ? term.slice(0, term.length - 2) : term;
  return new RegExp(`(^|[^\\p{L}\\p{N}])${stem.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`, 'u');
}

export interface KnowledgeIndex {
  replaceOwner(owner: string, chunks: readonly ChunkRecord[]): Promise<void>;
  removeOwner(owner: string): Promise<void>;
  /**
   * Passages relevant to the query for this audience, best first; empty when nothing relevant.
   * `query` may hold variants (the judge's terms, the customer's words): a passage is relevant
   * when it mentions at least `minCoverage` of one variant's significant words.
   */
  search(query: string | readonly string[], audience: Audience, limit: number): Promise<Passage[]>;
  size(): number;
  owners(): number;
}

type IndexedChunk = { id: string; title: string; heading: string; text: string; scope: string[] };

export async function createKnowledgeIndex(options: { minCoverage?: number } = {}): Promise<KnowledgeIndex> {
  const minCoverage = options.minCoverage ?? 0.5;
  const db: AnyOrama = create({
    schema: { title: 'string', heading: 'string', text: 'string', scope: 'enum[]' } as const,
    components: { tokenizer: { stemming: false } },
  });
  const chunks = new Map<string, ChunkRecord>();
  const byOwner = new Map<string, string[]>();

  const removeOwner = async (owner: string) => {
    const ids = byOwner.get(owner);
    if (!ids) return;
    byOwner.delete(owner);
    // One by one: removeMultiple finishes batches past its first on later timer ticks, after it returned.
    for (const id of ids) await remove(db, id);
    for (const id of ids) chunks.delete(id);
  };

  return {
    async replaceOwner(owner, list) {
      await removeOwner(owner);
      if (list.length === 0) return;
      const docs: IndexedChunk[] = list.map((chunk) => ({
        id: chunk._id,
        title: chunk.title,
        heading: chunk.headingPath.join(' '),
        text: chunk.text,
        scope: chunk.sites.length > 0 ? chunk.sites : [EVERYONE],
      }));
      await insertMultiple(db, docs);
      for (const chunk of list) chunks.set(chunk._id, chunk);
      byOwner.set(
        owner,
        list.map((chunk) => chunk._id),
      );
    },

    removeOwner,

    async search(query, audience, limit) {
      const variants = (typeof query === 'string' ? [query] : query).map(significantTerms).filter((list) => list.length > 0);
      const terms = [...new Set(variants.flat())];
      const patterns = new Map(terms.map((term) => [term, mentionPattern(term)]));
      if (terms.length === 0 || chunks.size === 0) return [];
      const scope = [EVERYONE, ...(audience.site ? [audience.site] : []), ...(audience.channel ? [audience.channel] : [])];
      const result = await search(db, {
        term: terms.join(' '),
        properties: ['title', 'heading', 'text'],
        boost: { title: 2, heading: 1.5 },
        threshold: 1,
        limit: Math.max(limit * 4, 20),
        where: { scope: { containsAny: scope } },
      });
      const passages: Passage[] = [];
      for (const hit of result.hits) {
        const chunk = chunks.get(String(hit.id));
        if (!chunk) continue;
        const haystack = `${chunk.title} ${chunk.headingPath.join(' ')} ${chunk.text}`.toLowerCase();
        const relevant = variants.some(
          (list) => list.filter((term) => patterns.get(term)?.test(haystack)).length >= Math.max(1, Math.ceil(list.length * minCoverage)),
        );
        if (!relevant) continue;
        passages.push({ chunkId: chunk._id, title: chunk.title, headingPath: chunk.headingPath, url: chunk.url, text: chunk.text, score: hit.score });
        if (passages.length >= limit) break;
      }
      return passages;
    },

    size: () => chunks.size,
    owners: () => byOwner.size,
  };
}
