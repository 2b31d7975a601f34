/**
 * splitMessage at the 1,600-character boundary: a part never ends or starts inside an emoji,
 * a flag or a family emoji, and the parts put back together are the reply.
 */
import { describe, expect, test } from '@jest/globals';
import { splitMessage, WHATSAPP_BODY_LIMIT } from '../../channels/whatsapp/split-message.js';

const graphemes = (text: string) => [...new Intl.Segmenter(undefined, { granularity: 'grapheme' }).segment(text)].map(({ segment }) => segment);

describe('splitMessage at the limit with no space to break at', () => {
  test.each([
    ['an emoji (surrogate pair)', '😀'],
    ['a flag (two regional indicators)', '🇪🇸'],
    ['a family emoji (ZWJ sequence)', '👨‍👩‍👧‍👦'],
    ['a letter with a combining accent', 'e\u0301'],
  ])('%s straddling character 1,600 moves whole to the next part', (_name, cluster) => {
    const head = 'a'.repeat(WHATSAPP_BODY_LIMIT - 1);
    const text = `${head}${cluster}${'b'.repeat(50)}`;
    const parts = splitMessage(text);
    expect(parts.map((part) => part.isWellFormed())).toEqual([true, true]);
    expect(parts[0]).toBe(head);
    expect(parts[1]?.startsWith(cluster)).toBe(true);
    expect(parts.join('')).toBe(text);
    expect(graphemes(parts.join(''))).toEqual(graphemes(text));
  });

  test('a run of emoji splits into well-formed parts within the limit', () => {
    const text = `${'x'.repeat(101)}${'🙂'.repeat(2000)}`;
    const parts = splitMessage(text);
    expect(parts.every((part) => part.isWellFormed() && part.length <= WHATSAPP_BODY_LIMIT)).toBe(true);
    expect(parts.join('')).toBe(text);
  });
});
