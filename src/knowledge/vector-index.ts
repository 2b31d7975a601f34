/**
 * Chunk embeddings by slot, kept compact and searched by a full scan in two steps:
 *   - each vector is normalised and held as int8 codes with one scale (dimensions bytes a chunk:
 *     512 KB per 1,000 chunks at 512 dimensions) and as sign bits (dimensions / 8 bytes);
 *   - a query is compared to every held vector by the Hamming distance of the sign bits (a few
 *     integer operations per vector), and the closest `RESCORE` are rescored by their int8
 *     codes' cosine (binary quantisation with rescoring, as vector databases do).
 * A float32 scan of 20,000 × 512 took 20–25 ms on this machine; this takes a few.
 * The first vector fixes the dimensions; a vector of another size (a new model) is not held.
 */

/** Candidates the sign-bit pass hands to the int8 rescoring (per result wanted, at least `MIN_RESCORE`). */
const RESCORE_PER_RESULT = 8;
const MIN_RESCORE = 200;

/** Set bits of every 16-bit value (64 KB): two lookups count a word's. */
const BITS16 = new Uint8Array(65_536);
for (let value = 1; value < 65_536; value += 1) BITS16[value] = (value & 1) + (BITS16[value >>> 1] ?? 0);

export class VectorIndex {
  private dimensions = 0;
  private words = 0;
  private codes = new Int8Array(0);
  private scales = new Float32Array(0);
  private bits = new Uint32Array(0);
  private present = new Uint8Array(0);
  private distances = new Uint16Array(0);
  private count = 0;

  /** Holds `vector` for `slot`; false when its size is not the index's. */
  set(slot: number, vector: Float32Array): boolean {
    if (this.dimensions === 0 && vector.length > 0) {
      this.dimensions = vector.length;
      this.words = Math.ceil(vector.length / 32);
    }
    if (vector.length !== this.dimensions || vector.length === 0) return false;
    if (slot >= this.present.length) this.grow(slot + 1);
    let norm = 0;
    let largest = 0;
    for (const value of vector) {
      norm += value * value;
      largest = Math.max(largest, Math.abs(value));
    }
    if (norm === 0) return false;
    const offset = slot * this.dimensions;
    this.bits.fill(0, slot * this.words, (slot + 1) * this.words);
    vector.forEach((value, at) => {
      this.codes[offset + at] = Math.round((value / largest) * 127);
      const word = slot * this.words + (at >>> 5);
      if (value > 0) this.bits[word] = (this.bits[word] ?? 0) | (1 << (at & 31));
    });
    this.scales[slot] = largest / 127 / Math.sqrt(norm);
    if (this.present[slot] !== 1) this.count += 1;
    this.present[slot] = 1;
    return true;
  }

  clear(slot: number): void {
    if (this.present[slot] !== 1) return;
    this.present[slot] = 0;
    this.count -= 1;
  }

  size(): number {
    return this.count;
  }

  has(slot: number): boolean {
    return this.present[slot] === 1;
  }

  /** The `k` held slots most similar to `query` (cosine ≥ `minSimilarity`) that `accept` takes, best first. */
  nearest(query: Float32Array, k: number, minSimilarity: number, accept: (slot: number) => boolean): { slot: number; similarity: number }[] {
    const { dimensions, words } = this;
    if (this.count === 0 || query.length !== dimensions) return [];
    let norm = 0;
    const signs = new Uint32Array(words);
    query.forEach((value, at) => {
      norm += value * value;
      if (value > 0) signs[at >>> 5] = (signs[at >>> 5] ?? 0) | (1 << (at & 31));
    });
    if (norm === 0) return [];
    // 1. Hamming distance of the sign bits, and how many slots lie at each distance.
    const histogram = new Uint32Array(dimensions + 1);
    const slots = this.present.length;
    for (let slot = 0; slot < slots; slot += 1) {
      if (this.present[slot] !== 1) continue;
      let distance = 0;
      const base = slot * words;
      for (let word = 0; word < words; word += 1) {
        const differing = (this.bits[base + word] ?? 0) ^ (signs[word] ?? 0);
        distance += (BITS16[differing & 0xffff] ?? 0) + (BITS16[differing >>> 16] ?? 0);
      }
      this.distances[slot] = distance;
      histogram[distance] = (histogram[distance] ?? 0) + 1;
    }
    let cutoff = 0;
    const wanted = Math.max(MIN_RESCORE, k * RESCORE_PER_RESULT);
    for (let seen = 0; cutoff < dimensions && seen + (histogram[cutoff] ?? 0) < wanted; cutoff += 1) seen += histogram[cutoff] ?? 0;
    // 2. The closest, rescored by their int8 codes.
    const scale = 1 / Math.sqrt(norm);
    const found: { slot: number; similarity: number }[] = [];
    for (let slot = 0; slot < slots; slot += 1) {
      if (this.present[slot] !== 1 || (this.distances[slot] ?? 0) > cutoff) continue;
      const offset = slot * dimensions;
      let dot = 0;
      for (let at = 0; at < dimensions; at += 1) dot += (this.codes[offset + at] ?? 0) * (query[at] ?? 0);
      const similarity = dot * (this.scales[slot] ?? 0) * scale;
      if (similarity >= minSimilarity && accept(slot)) found.push({ slot, similarity });
    }
    return found.sort((a, b) => b.similarity - a.similarity).slice(0, k);
  }

  private grow(slots: number): void {
    const capacity = Math.max(slots, Math.ceil(this.present.length * 1.5), 256);
    const resize = <T extends Int8Array | Float32Array | Uint32Array | Uint8Array | Uint16Array>(array: T, length: number, make: (length: number) => T) => {
      const grown = make(length);
      grown.set(array);
      return grown;
    };
    this.codes = resize(this.codes, capacity * this.dimensions, (n) => new Int8Array(n));
    this.bits = resize(this.bits, capacity * this.words, (n) => new Uint32Array(n));
    this.scales = resize(this.scales, capacity, (n) => new Float32Array(n));
    this.present = resize(this.present, capacity, (n) => new Uint8Array(n));
    this.distances = new Uint16Array(capacity);
  }
}
