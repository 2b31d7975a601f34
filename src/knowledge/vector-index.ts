/**
 * Chunk embeddings by slot in one `Float32Array` (slot × dimensions), each normalised to unit
 * length so a dot product is the cosine. The first vector fixes the dimensions; a vector of
 * another size (the embedding model changed) is not held. Nearest neighbours by a full scan:
 * 20,000 × 512 floats is about 40 MB and a few milliseconds.
 */
export class VectorIndex {
  private dimensions = 0;
  private data = new Float32Array(0);
  private present = new Uint8Array(0);
  private count = 0;

  /** Holds `vector` for `slot`; false when its size is not the index's. */
  set(slot: number, vector: Float32Array): boolean {
    if (this.dimensions === 0) this.dimensions = vector.length;
    if (vector.length !== this.dimensions || vector.length === 0) return false;
    if ((slot + 1) * this.dimensions > this.data.length) this.grow(slot + 1);
    let norm = 0;
    for (let at = 0; at < vector.length; at += 1) norm += vector[at]! * vector[at]!;
    const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
    const offset = slot * this.dimensions;
    for (let at = 0; at < vector.length; at += 1) this.data[offset + at] = vector[at]! * scale;
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

  /** The `k` held slots most similar to `query` (cosine ≥ `minSimilarity`) that `accept` takes, best first. */
  nearest(query: Float32Array, k: number, minSimilarity: number, accept: (slot: number) => boolean): { slot: number; similarity: number }[] {
    const dimensions = this.dimensions;
    if (this.count === 0 || query.length !== dimensions) return [];
    let norm = 0;
    for (let at = 0; at < dimensions; at += 1) norm += query[at]! * query[at]!;
    if (norm === 0) return [];
    const scale = 1 / Math.sqrt(norm);
    const best: { slot: number; similarity: number }[] = [];
    const slots = this.present.length;
    const data = this.data;
    for (let slot = 0; slot < slots; slot += 1) {
      if (this.present[slot] !== 1) continue;
      const offset = slot * dimensions;
      let dot = 0;
      for (let at = 0; at < dimensions; at += 1) dot += data[offset + at]! * query[at]!;
      const similarity = dot * scale;
      if (similarity < minSimilarity || (best.length === k && similarity <= best[k - 1]!.similarity) || !accept(slot)) continue;
      if (best.length === k) best.pop();
      let at = best.length;
      while (at > 0 && best[at - 1]!.similarity < similarity) at -= 1;
      best.splice(at, 0, { slot, similarity });
    }
    return best;
  }

  private grow(slots: number): void {
    const capacity = Math.max(slots, Math.ceil(this.present.length * 1.5), 256);
    const data = new Float32Array(capacity * this.dimensions);
    data.set(this.data);
    this.data = data;
    const present = new Uint8Array(capacity);
    present.set(this.present);
    this.present = present;
  }
}
