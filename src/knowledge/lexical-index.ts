/**
 * A compact BM25 index over numbered slots (one per chunk): a term dictionary, and per term one
 * growable `Uint32Array` of postings, each `slot << 8 | weighted term frequency` (title words
 * count 2, heading words 1.5, text words 1, doubled to stay integers). Field lengths are one
 * `Float32Array`. A removed slot is marked dead and skipped; once dead slots pass a quarter of
 * all, one pass drops them from every posting list (and from the document frequencies), forgets
 * the terms no live slot holds any more (the vocabulary and prefix expansion hold live terms
 * only), and their slots are reused.
 *
 * Why not Orama's own index: at 20,000 chunks it holds a per-document object of term
 * frequencies, a radix tree and a copy of each document — 337 MB for one text field without the
 * document copies (docs/knowledge.md); this holds the same BM25 in about a tenth of that.
 * Nor MiniSearch's: 75 MB held at the same 20,000 chunks against 20 MB here (`npm run bench:knowledge-libraries`).
 */

import { withinEdits } from './text-analysis.js';

const K1 = 1.2;
const B = 0.75;
const MAX_TF = 255;
/** Query terms a search scores at once (one bit each in a slot's match mask). */
export const MAX_QUERY_TERMS = 32;

export interface WeightedTerms {
  /** term → weighted frequency ×2 in this slot */
  counts: Map<string, number>;
  /** weighted length */
  length: number;
}

/** A slot's terms from its fields (title ×2, heading ×1.5, text ×1; stored doubled). */
export function weighTerms(fields: readonly (readonly [readonly string[], number])[]): WeightedTerms {
  const counts = new Map<string, number>();
  let length = 0;
  for (const [list, weight] of fields) {
    for (const term of list) counts.set(term, (counts.get(term) ?? 0) + weight * 2);
    length += list.length * weight;
  }
  return { counts, length };
}

export class LexicalIndex {
  private readonly ids = new Map<string, number>();
  private postings: Uint32Array[] = [];
  private used: number[] = [];
  private documentFrequency: number[] = [];
  private lengths = new Float32Array(1024);
  private alive = new Uint8Array(1024);
  private sorted: string[] | undefined;
  private live = 0;
  private dead = 0;
  private totalLength = 0;
  private slotCount = 0;
  private readonly free: number[] = [];
  private scores = new Float32Array(1024);
  private masks = new Uint32Array(1024);

  /** Takes a free slot (the caller keeps what else it holds by slot). */
  allocate(): number {
    const slot = this.free.pop() ?? this.slotCount++;
    if (slot >= this.alive.length) this.grow(slot + 1);
    return slot;
  }

  add(slot: number, weighted: WeightedTerms): void {
    for (const [term, count] of weighted.counts) {
      let id = this.ids.get(term);
      if (id === undefined) {
        id = this.postings.length;
        this.ids.set(term, id);
        this.postings.push(new Uint32Array(4));
        this.used.push(0);
        this.documentFrequency.push(0);
        this.sorted = undefined;
      }
      let list = this.listOf(id);
      const used = this.used[id] ?? 0;
      if (used === list.length) {
        const grown = new Uint32Array(list.length * 2);
        grown.set(list);
        this.postings[id] = list = grown;
      }
      list[used] = (slot << 8) | Math.min(MAX_TF, Math.round(count));
      this.used[id] = used + 1;
      this.documentFrequency[id] = (this.documentFrequency[id] ?? 0) + 1;
    }
    this.lengths[slot] = weighted.length;
    this.alive[slot] = 1;
    this.totalLength += weighted.length;
    this.live += 1;
  }

  remove(slot: number): void {
    if (this.alive[slot] !== 1) return;
    this.alive[slot] = 2;
    this.live -= 1;
    this.dead += 1;
    this.totalLength -= this.lengths[slot] ?? 0;
    if (this.dead * 4 > this.slotCount) this.compact();
  }

  /** Index terms starting with `prefix` (at most `limit`), from a sorted copy of the vocabulary built when first needed. */
  expand(prefix: string, limit: number): string[] {
    const sorted = this.vocabulary();
    const out: string[] = [];
    for (let at = this.lowerBound(prefix); at < sorted.length && out.length < limit; at += 1) {
      const term = sorted[at];
      if (term === undefined || !term.startsWith(prefix)) break;
      out.push(term);
    }
    return out;
  }

  /** Live slots holding `term` (dead postings count until the next compaction: never more than the live slots). */
  frequency(term: string): number {
    const id = this.ids.get(term);
    return id === undefined ? 0 : Math.min(this.documentFrequency[id] ?? 0, this.live);
  }

  /** Live slots. */
  get slots(): number {
    return this.live;
  }

  /**
   * Index terms `prefix + w` where `w` begins with `word`'s first letter and is within `maxEdits`
   * of it (typo tolerance: only for a word the index lacks; a first letter is rarely the one
   * mistyped), at most `limit`, from the sorted vocabulary's range of that beginning (terms
   * beginning with `exclude` skipped).
   */
  near(prefix: string, word: string, maxEdits: number, limit: number, exclude?: string): string[] {
    const sorted = this.vocabulary();
    const start = prefix + word.slice(0, 1);
    const out: string[] = [];
    for (let at = this.lowerBound(start); at < sorted.length && out.length < limit; at += 1) {
      const term = sorted[at] ?? '';
      if (!term.startsWith(start)) break;
      if (exclude !== undefined && term.startsWith(exclude)) continue;
      if (Math.abs(term.length - prefix.length - word.length) <= maxEdits && withinEdits(word, term.slice(prefix.length), maxEdits)) out.push(term);
    }
    return out;
  }

  private vocabulary(): string[] {
    return (this.sorted ??= [...this.ids.keys()].sort());
  }

  private lowerBound(prefix: string): number {
    const sorted = this.vocabulary();
    let low = 0;
    let high = sorted.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if ((sorted[middle] ?? '') < prefix) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** Gives back the room posting lists grew into (after a build; they grow again on change). */
  trim(): void {
    this.postings.forEach((list, id) => {
      const used = this.used[id] ?? 0;
      if (used < list.length) this.postings[id] = list.slice(0, Math.max(1, used));
    });
  }

  /**
   * BM25 of each slot against `query`: each entry is one query term's alternatives (stems in
   * several languages, prefix expansions) with their weights (0: marks a slot an earlier entry
   * scored, scores nothing); an entry's bit in the slot's mask says the slot holds it. Returns the slots touched, their scores and masks (valid until the next call).
   */
  score(query: readonly (readonly (readonly [string, number])[])[]): { slots: number[]; scores: Float32Array; masks: Uint32Array } {
    const slots: number[] = [];
    const average = this.live > 0 ? this.totalLength / this.live : 1;
    query.slice(0, MAX_QUERY_TERMS).forEach((alternatives, bit) => {
      for (const [term, weight] of alternatives) {
        const id = this.ids.get(term);
        if (id === undefined) continue;
        if (weight === 0) {
          this.mark(id, 1 << bit);
          continue;
        }
        // Dead postings still count until the next compaction: never more than the live slots.
        const df = Math.min(this.documentFrequency[id] ?? 0, this.live);
        const idf = Math.log(1 + (this.live - df + 0.5) / (df + 0.5));
        const list = this.listOf(id);
        const used = this.used[id] ?? 0;
        for (let at = 0; at < used; at += 1) {
          const entry = list[at] ?? 0;
          const slot = entry >>> 8;
          if (this.alive[slot] !== 1) continue;
          const tf = (entry & 0xff) / 2;
          const norm = tf + K1 * (1 - B + (B * (this.lengths[slot] ?? 0)) / average);
          if (this.masks[slot] === 0 && this.scores[slot] === 0) slots.push(slot);
          this.scores[slot] = (this.scores[slot] ?? 0) + (weight * idf * tf * (K1 + 1)) / norm;
          this.masks[slot] = (this.masks[slot] ?? 0) | (1 << bit);
        }
      }
    });
    return { slots, scores: this.scores, masks: this.masks };
  }

  /** Sets `bit` on the slots already scored that hold term `id` (a term that tells relevance, not rank). */
  private mark(id: number, bit: number): void {
    const list = this.listOf(id);
    const used = this.used[id] ?? 0;
    for (let at = 0; at < used; at += 1) {
      const slot = (list[at] ?? 0) >>> 8;
      if ((this.scores[slot] ?? 0) > 0) this.masks[slot] = (this.masks[slot] ?? 0) | bit;
    }
  }

  /** A term's posting list (every id the vocabulary handed out has one). */
  private listOf(id: number): Uint32Array {
    const list = this.postings[id];
    if (!list) throw new Error(`knowledge index: term ${id} has no posting list`);
    return list;
  }

  /** Clears what `score` left on these slots. */
  reset(slots: readonly number[]): void {
    for (const slot of slots) {
      this.scores[slot] = 0;
      this.masks[slot] = 0;
    }
  }

  get terms(): number {
    return this.ids.size;
  }

  private grow(minimum: number): void {
    const size = Math.max(minimum, this.alive.length * 2);
    const copy = <T extends Float32Array | Uint8Array | Uint32Array>(array: T, make: (size: number) => T) => {
      const grown = make(size);
      grown.set(array);
      return grown;
    };
    this.lengths = copy(this.lengths, (n) => new Float32Array(n));
    this.alive = copy(this.alive, (n) => new Uint8Array(n));
    this.scores = copy(this.scores, (n) => new Float32Array(n));
    this.masks = copy(this.masks, (n) => new Uint32Array(n));
  }

  /** Drops dead slots from every posting list and frees them. */
  private compact(): void {
    for (let id = 0; id < this.postings.length; id += 1) {
      const list = this.listOf(id);
      const used = this.used[id] ?? 0;
      let kept = 0;
      for (let at = 0; at < used; at += 1) {
        const entry = list[at] ?? 0;
        if (this.alive[entry >>> 8] === 1) list[kept++] = entry;
      }
      this.used[id] = kept;
      this.documentFrequency[id] = kept;
      if (kept * 4 < list.length && list.length > 4) this.postings[id] = list.slice(0, Math.max(4, kept));
    }
    for (let slot = 0; slot < this.slotCount; slot += 1) {
      if (this.alive[slot] === 2) {
        this.alive[slot] = 0;
        this.free.push(slot);
      }
    }
    this.dead = 0;
    this.dropEmptyTerms();
  }

  /** Forgets the terms whose posting lists a compaction emptied, renumbering the rest. */
  private dropEmptyTerms(): void {
    if (this.used.every((count) => count > 0)) return;
    const postings: Uint32Array[] = [];
    const used: number[] = [];
    const documentFrequency: number[] = [];
    for (const [term, id] of this.ids) {
      const count = this.used[id] ?? 0;
      if (count === 0) {
        this.ids.delete(term);
        continue;
      }
      this.ids.set(term, postings.length);
      postings.push(this.listOf(id));
      used.push(count);
      documentFrequency.push(this.documentFrequency[id] ?? 0);
    }
    this.postings = postings;
    this.used = used;
    this.documentFrequency = documentFrequency;
    this.sorted = undefined;
  }
}
