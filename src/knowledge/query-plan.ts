/**
 * What a query asks of the lexical index, and the relevance rule that decides which passages
 * answer it at all. Each distinct query word (at most `MAX_WORDS`) gets:
 *   - its BM25 alternatives: its stem in every language the index holds, what its shortest stem
 *     begins (weight 0.6), and, for a word the index lacks, the index words within one edit (two
 *     from seven letters: typo tolerance; weight 0.8);
 *   - its mentions (weight 0: relevance, not rank): a passage mentions the word when it holds one of
 *     its stems, a word beginning with it (less its last two letters past five: "returns" →
 *     "retur"), or a typo's correction. Arabic words, whose articles and prepositions are joined to
 *     them, count by their stem;
 *   - a weight by rarity: the IDF of its commonest form in the index, the most a word can weigh
 *     when the index holds it in no form at all (a rare word the passage lacks sinks it) — but a
 *     bare number no passage holds (the customer's height, an order number) weighs nothing.
 * A passage is relevant when, for one of the query's variants (the judge's terms, the customer's
 * words), the words it mentions carry at least `minCoverage` of that variant's weight. Stop words
 * and chat filler never reach here (`significantWords`).
 */
import type { Language } from '../words/language.js';
import { MAX_QUERY_TERMS, type LexicalIndex } from './lexical-index.js';
import { isMisspeltStopWord, stem } from './text-analysis.js';

/** Each passage's words are also indexed as written (folded) under this mark, for mentions. */
export const SURFACE = '\u0001';
export const ARABIC = /[\u0600-\u06ff]/;
const PREFIX_EXPANSIONS = 8;
const PREFIX_WEIGHT = 0.6;
const SURFACE_EXPANSIONS = 64;
const CORRECTIONS = 4;
const CORRECTION_WEIGHT = 0.8;
/** How many letters past the query word's (or its prefix's) a passage word may run and still mention it. */
const MAX_EXTRA = 4;
/** A bare number weighs at most as a word in this share of the passages: "1.72 tall" is about height, not "1". */
const NUMBER_RARITY = 4;
/** Bit of a word's mentions: its BM25 entry's bit plus this. */
const SURFACE_BIT = MAX_QUERY_TERMS / 2;
const MAX_WORDS = SURFACE_BIT;

export interface QueryPlan {
  /** The lexical index's query: BM25 entries by word, empty up to `SURFACE_BIT`, then each word's mentions. */
  entries: [string, number][][];
  /** Each word's weight by rarity (by its bit). */
  weights: number[];
  /** Each variant's words as a bit mask, and their total weight. */
  variants: { mask: number; total: number }[];
  /** Coverage by mentioned-words mask, as computed. */
  memo: Map<number, number>;
}

/** A word's weight by rarity; one the index lacks in every form weighs as one only a single passage holds. */
const idf = (documents: number, frequency: number) => Math.log(1 + (documents - Math.max(1, frequency) + 0.5) / (Math.max(1, frequency) + 0.5));

/** The words of the index a query word's mentions take in: beginning with it (short words: only as written), past five letters less its last two; at most `MAX_EXTRA` letters longer. */
function surfaceForms(lexical: LexicalIndex, word: string): string[] {
  if (word.length < 4) return lexical.frequency(SURFACE + word) > 0 ? [SURFACE + word] : [];
  const prefix = word.length > 5 ? word.slice(0, -2) : word;
  return lexical.expand(SURFACE + prefix, SURFACE_EXPANSIONS).filter((term) => term.length - SURFACE.length <= prefix.length + MAX_EXTRA);
}

/**
 * A word the index lacks: the index words it may be a typo of. Four letters: a letter left out
 * ("ordr"); five or six: one edit; seven and more: two. Shorter words are taken as written
 * ("rent" is no typo of "rest").
 */
function corrections(lexical: LexicalIndex, prefix: string, word: string): string[] {
  if (word.length < 4) return [];
  const found = lexical.near(prefix, word, word.length >= 7 ? 2 : 1, CORRECTIONS, prefix === '' ? SURFACE : undefined);
  return word.length === 4 ? found.filter((term) => term.length - prefix.length === 5) : found;
}

function wordPlan(
  lexical: LexicalIndex,
  languages: readonly Language[],
  word: string,
): { alternatives: [string, number][]; mentions: [string, number][]; frequency: number } | undefined {
  const stems = [...new Set(languages.map((language) => stem(word, language)))];
  const alternatives: [string, number][] = stems.map((term) => [term, 1]);
  const shortest = stems.reduce((a, b) => (b.length < a.length ? b : a));
  if (shortest.length >= 4) for (const term of lexical.expand(shortest, PREFIX_EXPANSIONS)) if (!stems.includes(term)) alternatives.push([term, PREFIX_WEIGHT]);
  const stemFrequency = Math.max(0, ...stems.map((term) => lexical.frequency(term)));
  if (ARABIC.test(word)) return { alternatives, mentions: [], frequency: stemFrequency };
  const surfaces = new Set(surfaceForms(lexical, word));
  let frequency = Math.max(stemFrequency, lexical.frequency(SURFACE + word));
  const known = frequency > 0;
  // A misspelt stop word, or a figure no passage holds (a height, an order number): nothing to tell passages apart by.
  if (!known && (isMisspeltStopWord(word) || /^\d+$/.test(word))) return undefined;
  const correctedStems = new Set<string>();
  if (!known && !/\d/.test(word)) {
    for (const corrected of corrections(lexical, SURFACE, word)) surfaces.add(corrected);
    // A typo may sit nearer the stem of the word it misspells ("asembly" → "assembl" of "assembled").
    if (shortest.length >= 5) for (const corrected of corrections(lexical, '', shortest)) correctedStems.add(corrected);
  }
  if (!known) {
    const ranked = new Set<string>(stems);
    for (const surface of surfaces) {
      frequency = Math.max(frequency, lexical.frequency(surface));
      // The first few forms also rank (BM25), each stem once.
      for (const language of languages) if (ranked.size < stems.length + PREFIX_EXPANSIONS) ranked.add(stem(surface.slice(SURFACE.length), language));
    }
    for (const term of ranked) if (!stems.includes(term)) alternatives.push([term, CORRECTION_WEIGHT]);
    for (const term of correctedStems) {
      frequency = Math.max(frequency, lexical.frequency(term));
      alternatives.push([term, CORRECTION_WEIGHT]);
    }
  }
  const mentions: [string, number][] = [...surfaces].map((term) => [term, 0]);
  return { alternatives, mentions, frequency: /^\d+$/.test(word) ? Math.max(frequency, lexical.slots / NUMBER_RARITY) : frequency };
}

/** A word the index lacks written as two it holds ("giftcard", "Lieferadresse"): the two; else the word. */
function splitCompound(lexical: LexicalIndex, word: string): string[] {
  if (word.length < 7 || /\d/.test(word) || lexical.frequency(SURFACE + word) > 0) return [word];
  for (let at = 3; at <= word.length - 3; at += 1) {
    const [left, right] = [word.slice(0, at), word.slice(at)];
    if (lexical.frequency(SURFACE + left) > 0 && lexical.frequency(SURFACE + right) > 0) return [left, right];
  }
  return [word];
}

/** The plan for a query's variants (lists of significant words). */
export function planQuery(lexical: LexicalIndex, languages: readonly Language[], queryVariants: readonly (readonly string[])[]): QueryPlan {
  const variants = queryVariants.map((list) => list.flatMap((word) => splitCompound(lexical, word)));
  const planned = [...new Set(variants.flat())].map((word) => [word, wordPlan(lexical, languages, word)] as const);
  const kept = planned.flatMap(([word, plan]) => (plan ? [{ word, plan }] : [])).slice(0, MAX_WORDS);
  const distinct = kept.map(({ word }) => word);
  const plans = kept.map(({ plan }) => plan);
  const documents = Math.max(1, lexical.slots);
  const weights = plans.map(({ frequency }) => idf(documents, frequency));
  const bit = new Map(distinct.map((word, at) => [word, at]));
  return {
    memo: new Map(),
    entries: [
      ...plans.map((plan) => plan.alternatives),
      ...Array.from({ length: SURFACE_BIT - plans.length }, () => []),
      ...plans.map((plan) => plan.mentions),
    ],
    weights,
    variants: variants.map((list) => {
      let mask = 0;
      let total = 0;
      for (const word of new Set(list)) {
        const at = bit.get(word);
        if (at === undefined) continue;
        mask |= 1 << at;
        total += weights[at] ?? 0;
      }
      return { mask, total };
    }),
  };
}

/**
 * The best share of a variant's weight the words a passage mentions carry, from its slot's mask
 * in the lexical index: a word is mentioned by its BM25 entry (a stem, what a stem begins, a
 * typo's correction) or its surface forms. Memoised by mask (a query has few distinct ones).
 */
export function coverage(plan: QueryPlan, slotMask: number): number {
  const words = (1 << SURFACE_BIT) - 1;
  const mentioned = ((slotMask >>> SURFACE_BIT) | slotMask) & words;
  const known = plan.memo.get(mentioned);
  if (known !== undefined) return known;
  let best = 0;
  for (const variant of plan.variants) {
    if (variant.total <= 0) continue;
    let covered = 0;
    for (let at = 0; at < plan.weights.length; at += 1) if (variant.mask & mentioned & (1 << at)) covered += plan.weights[at] ?? 0;
    best = Math.max(best, covered / variant.total);
  }
  plan.memo.set(mentioned, best);
  return best;
}
