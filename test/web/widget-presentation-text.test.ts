/**
 * The widget's presentation rules that need no browser, in Node: a question drawn with buttons
 * shows its text without the numbered answers and the "Reply 1 or yes" hint (that text stays what
 * the service stores and sends elsewhere); fenced code blocks are read as literal blocks, also
 * while streaming; a preview is plain words; links and rings read on an assistant's bubble in
 * the dark palette and on the log in the light one.
 */
import { describe, expect, test } from '@jest/globals';
import { confirmationText } from '../../src/actions/summary.js';
import { questionText } from '../../channels/web/widget/question-text.js';
import { closeOpenMarkers, parseRichText, plainText } from '../../channels/web/widget/rich-text.js';
import { DARK_BUBBLE, LIGHT_SURFACE, themeFor } from '../../channels/web/widget/theme.js';

function contrast(first: string, second: string): number {
  const luminance = (hex: string): number => {
    const [red, green, blue] = [1, 3, 5].map((index) => parseInt(hex.slice(index, index + 2), 16) / 255) as [number, number, number];
    const linear = (value: number): number => (value <= 0.03928 ? value / 12.92 : ((value + 0.055) / 1.055) ** 2.4);
    return 0.2126 * linear(red) + 0.7152 * linear(green) + 0.0722 * linear(blue);
  };
  const [lighter, darker] = [luminance(first), luminance(second)].sort((a, b) => b - a) as [number, number];
  return (lighter + 0.05) / (darker + 0.05);
}

describe('questionText', () => {
  const yesNo = [
    { id: 'act:1:confirm', label: 'Confirm' },
    { id: 'act:1:cancel', label: 'Cancel' },
  ];

  test('a confirmation as the service writes it keeps its summary, without the numbered list and the hint', () => {
    const text = confirmationText('Please confirm: Reschedule a delivery\n• New delivery date: 2026-12-05', yesNo, 'en');
    expect(text).toContain('Reply 1');
    expect(questionText(text, yesNo)).toBe('Please confirm: Reschedule a delivery\n• New delivery date: 2026-12-05');
  });

  test("select_entity's question, in another language", () => {
    const companies = [
      { id: 'ent:HL-1', label: 'Acme Ltd' },
      { id: 'ent:HL-2', label: 'Beta plc' },
    ];
    expect(questionText('¿De qué empresa se trata?\n1. Acme Ltd\n2. Beta plc\nResponda con el número o el nombre.', companies)).toBe(
      '¿De qué empresa se trata?',
    );
  });

  test('text without the list of its answers, or nothing but the list, is shown as it is', () => {
    expect(questionText('Shall I go ahead?', yesNo)).toBe('Shall I go ahead?');
    expect(questionText('1. Confirm\n2. Cancel', yesNo)).toBe('1. Confirm\n2. Cancel');
  });
});

describe('code blocks', () => {
  test('a fenced block is one literal block: no formatting, spaces and lines kept, the language name not shown', () => {
    expect(parseRichText('Run this:\n```sh\nnpm  start -- **x**\n  - not a list\n```\nDone.')).toEqual([
      { kind: 'paragraph', lines: [[{ kind: 'text', text: 'Run this:' }]] },
      { kind: 'codeBlock', text: 'npm  start -- **x**\n  - not a list' },
      { kind: 'paragraph', lines: [[{ kind: 'text', text: 'Done.' }]] },
    ]);
  });

  test('while streaming, an open block runs to the end and nothing in it is closed as emphasis', () => {
    expect(closeOpenMarkers('```\nconst a = b *')).toBe('```\nconst a = b *');
    expect(parseRichText('```\nconst a = b *')).toEqual([{ kind: 'codeBlock', text: 'const a = b *' }]);
  });

  test('a preview is plain words', () => {
    expect(plainText('**Good news:** your `order` is [here](https://harbour.example/o).\n```\nx = 1\n```')).toBe('Good news: your order is here. x = 1');
  });
});

describe('contrast on every surface', () => {
  test.each(['#2563eb', '#0b7285', '#fab005', '#e8590c', '#7048e8', '#ffffff'])('accent %s', (accent) => {
    const { light, dark } = themeFor(accent);
    expect(contrast(dark.link, DARK_BUBBLE)).toBeGreaterThanOrEqual(4.5);
    expect(contrast(dark.edge, DARK_BUBBLE)).toBeGreaterThanOrEqual(3);
    expect(contrast(light.link, LIGHT_SURFACE)).toBeGreaterThanOrEqual(4.5);
    expect(contrast(light.edge, LIGHT_SURFACE)).toBeGreaterThanOrEqual(3);
  });
});
