/**
 * The index's two rankings and their fusion: the word rule (BM25 weighted by the share of the
 * query a passage covers, `query-plan.ts`) and, with a query vector, the vector ranking fused
 * with it by reciprocal rank.
 */
import type { IndexSlots } from './index-slots.js';
import { coverage, planQuery } from './query-plan.js';

/** Reciprocal rank fusion's constant (Cormack et al.). */
const RRF_K = 60;
/** How deep each ranking goes into the fusion. */
export const FUSION_DEPTH = 50;
/** The least similarity a vector hit needs relative to the best one, to be fused at all. */
const RELATIVE_FLOOR = 0.85;

export interface Ranked {
  slot: number;
  score: number;
}
type InScope = (slot: number) => boolean;

/** Passages the word rule finds relevant, best first: BM25 weighted by the share of the query they cover. */
export function lexicalRanking(slots: IndexSlots, variants: string[][], inScope: InScope, depth: number, minCoverage: number): Ranked[] {
  const { lexical } = slots;
  const plan = planQuery(lexical, [...slots.languages], variants);
  const scored = lexical.score(plan.entries);
  const ranked: Ranked[] = [];
  for (const slot of scored.slots) {
    const score = scored.scores[slot] ?? 0;
    const covered = coverage(plan, scored.masks[slot] ?? 0);
    if (score > 0 && covered > 0 && covered >= minCoverage && inScope(slot)) ranked.push({ slot, score: score * covered });
  }
  lexical.reset(scored.slots);
  return ranked.sort((a, b) => b.score - a.score).slice(0, depth);
}

/**
 * Lexical and vector rankings fused by reciprocal rank: a vector hit counts when it is within
 * `RELATIVE_FLOOR` of the best one and the word rule found it relevant too, or alone when it
 * is `closeSimilarity` close (so embeddings never turn a decline into a passage on their own).
 */
export function fuseRankings(
  slots: IndexSlots,
  ranked: Ranked[],
  vector: Float32Array,
  inScope: InScope,
  { minSimilarity, closeSimilarity }: { minSimilarity: number; closeSimilarity: number },
): Ranked[] {
  const fused = new Map<number, number>();
  ranked.forEach(({ slot }, rank) => fused.set(slot, 1 / (RRF_K + rank + 1)));
  const hits = slots.vectors.nearest(vector, FUSION_DEPTH, minSimilarity, inScope);
  const floor = (hits[0]?.similarity ?? 0) * RELATIVE_FLOOR;
  hits
    .filter(({ slot, similarity }) => similarity >= floor && (fused.has(slot) || similarity >= closeSimilarity))
    .forEach(({ slot }, rank) => fused.set(slot, (fused.get(slot) ?? 0) + 1 / (RRF_K + rank + 1)));
  return [...fused].map(([slot, score]) => ({ slot, score })).sort((a, b) => b.score - a.score);
}
