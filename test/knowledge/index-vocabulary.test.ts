/**
 * The lexical index's vocabulary holds the terms of live passages only: a page re-crawled with
 * new words thousands of times leaves no dead terms behind, so the vocabulary stays the size of
 * the live content and a prefix expands to live terms.
 */
import { LexicalIndex, weighTerms } from '../../src/knowledge/lexical-index.js';

describe('the lexical index vocabulary', () => {
  it('forgets the terms of removed passages, and prefix expansion finds live terms only', () => {
    const index = new LexicalIndex();
    const put = (words: string[]) => {
      const slot = index.allocate();
      index.add(slot, weighTerms([[words, 1]]));
      return slot;
    };
    for (let n = 0; n < 10; n += 1) put([`kayak`, `harbour${n}`]);
    let page = put(['paddle', 'model0']);
    for (let n = 1; n <= 5_000; n += 1) {
      index.remove(page);
      page = put(['paddle', `model${n}`]);
    }
    // 10 harbour terms, kayak, paddle, model5000 live; at most a quarter of the slots dead before the next compaction.
    expect(index.terms).toBeLessThanOrEqual(13 + 3);
    expect(index.expand('model', 20)).toContain('model5000');
    expect(index.expand('model', 20).length).toBeLessThanOrEqual(4);
    const { slots, masks } = index.score([[['model5000', 1]]]);
    expect(slots.map((slot) => masks[slot])).toEqual([1]);
    index.reset(slots);
  });
});
