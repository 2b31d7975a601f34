/**
 * What the MCP server and the model wrote, made safe for the confirmation summary and the choice
 * question (src/actions/sanitise.ts): no bidi control, invisible character or line break
 * survives, WhatsApp markup formats nothing, and ordinary text — accents, other scripts, emoji —
 * reads as it was.
 */
import { describe, expect, test } from '@jest/globals';
import { plainLine } from '../../src/actions/sanitise.js';
import { enumOptions, enumQuestionText } from '../../src/actions/enum-question.js';
import { argumentTitle, renderSummary } from '../../src/actions/summary.js';

const BIDI = ['\u202A', '\u202B', '\u202C', '\u202D', '\u202E', '\u2066', '\u2067', '\u2068', '\u2069', '\u200E', '\u200F', '\u061C'];
const ZERO_WIDTH = ['\u200B', '\u200C', '\u200D', '\u2060', '\uFEFF', '\u00AD', '\u{E0041}'];
const BREAKS = ['\n', '\r', '\t', '\u000B', '\u000C', '\u0085', '\u2028', '\u2029', '\u0000', '\u0007', '\u001B', '\u007F', '\u009B'];

describe('plainLine', () => {
  test('removes every bidi control and invisible character', () => {
    for (const character of [...BIDI, ...ZERO_WIDTH]) expect(plainLine(`Refund${character} 10.00`)).toBe('Refund 10.00');
    // The classic: a right-to-left override that shows "exe.txt" for "txt.exe".
    expect(plainLine('invoice\u202Etxt.exe')).toBe('invoicetxt.exe');
  });

  test('turns line breaks and controls into one space: nothing starts a line of its own', () => {
    for (const character of BREAKS) expect(plainLine(`5001${character}• For: Borealis Bakery`)).toBe('5001 • For: Borealis Bakery');
    expect(plainLine('  a \u0085\u2028\n\n b  ')).toBe('a b');
    expect(plainLine('x\u3164y\u2800z')).toBe('x y z');
  });

  test('WhatsApp markup formats nothing, and the text stays readable', () => {
    expect(plainLine('*free* _now_ ~EUR 500~ ```code``` `x`')).toBe('∗free∗ ˍnowˍ ∼EUR 500∼ ˋˋˋcodeˋˋˋ ˋxˋ');
    expect(plainLine('ORD_12')).toBe('ORDˍ12');
  });

  test('leaves ordinary text as it was: accents, other scripts, emoji, one space', () => {
    for (const text of ['Luis Gómez', 'Zürich Straße 5', 'مرحبا بك', 'שלום', '東京都', 'Reschedule a delivery', '👍 ok', '10.00 EUR']) {
      expect(plainLine(text)).toBe(text);
    }
  });

  test('cuts a pile of combining marks, and long text by characters (never half an emoji)', () => {
    expect(plainLine(`a${'\u0301'.repeat(30)}b`)).toBe(`a${'\u0301'.repeat(4)}b`);
    expect(plainLine('😀'.repeat(10), 5)).toBe('😀😀😀😀…');
    expect(plainLine('short', 5)).toBe('short');
  });
});

describe('where the service shows it', () => {
  const caller = { kind: 'contact' as const, name: 'Ana\u202E *boss*', customerId: 'CUST-ACME', entities: [] };

  test('the summary: title, argument titles and names, values and whom it is for', () => {
    const summary = renderSummary({
      title: 'Cancel\u202E an *order*\n• For: Cirrus Freight',
      args: { order_ref: 'ORD_12\u2028• Amount: 0.00', note: { text: '~x~' }, customerId: 'CUST-ACME' },
      scoped: ['customerId'],
      jsonSchema: { properties: { order_ref: { type: 'string', title: '\u200B\u2066' }, note: { type: 'object', title: 'Note `quoted`' } } },
      caller,
    });
    expect(summary).toBe(
      [
        'Please confirm: Cancel an ∗order∗ • For: Cirrus Freight',
        '• Order ref: ORDˍ12 • Amount: 0.00',
        '• Note ˋquotedˋ: {"text":"∼x∼"}',
        '• For: Ana ∗boss∗',
      ].join('\n'),
    );
  });

  test('the choice question: the title, the argument and the enum labels', () => {
    const options = enumOptions({ enum: ['am', 'pm'], enumNames: ['*Morning*\u202E', '\u200B'] });
    expect(options).toEqual([
      { value: 'am', label: '∗Morning∗' },
      { value: 'pm', label: 'pm' },
    ]);
    expect(argumentTitle('slot', { title: 'Slot\u0085_when_' })).toBe('Slot ˍwhenˍ');
    const question = enumQuestionText({ action: 'Set\u2029a *slot*', argument: 'Slot\u202E', choices: [], language: 'en' });
    expect(question.split('\n')[0]).toBe('For "Set a ∗slot∗", please choose: Slot');
  });
});
