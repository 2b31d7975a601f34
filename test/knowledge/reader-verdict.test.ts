/**
 * The reply model's verdict on the passages it was given, as the service reads it: the
 * `[sources: …]` line is stripped from the reply and from every streamed piece of it, whatever
 * the pieces' sizes; `none` puts the service's own "I don't know" (in the customer's language,
 * with the offer of a person where one can be handed over) in place of the model's text; cited
 * numbers become the service's "Source:" line — titles and the business's own http(s) addresses,
 * never an address the model wrote.
 */
import { readerReply, readerStream, readVerdict } from '../../src/orchestrator/answer-leg-reader.js';
import { parseRichText } from '../../channels/web/widget/rich-text.js';

const SOURCES = [
  { title: 'How long does delivery take?', url: 'https://help.example/shipping' },
  { title: 'Returns [and] refunds', url: '' },
  { title: 'Warranty', url: 'javascript:alert(1)' },
  { title: 'Shipping (Austria)', url: 'https://help.example/at(ship)' },
];

/** The text the customer's widget shows once every piece went out, `text` cut into pieces of `size`. */
function streamed(text: string, size: number): string {
  const out: string[] = [];
  const stream = readerStream((delta) => out.push(delta));
  for (let at = 0; at < text.length; at += size) stream.delta(text.slice(at, at + size));
  stream.end();
  return out.join('');
}

describe("the reader's verdict", () => {
  it.each([1, 2, 3, 7, 1000])('never streams the verdict line, in pieces of %i characters', (size) => {
    const reply = '[sources: 1, 2]\nDelivery takes 2 to 3 business days [see the page].';
    expect(streamed(reply, size)).toBe('Delivery takes 2 to 3 business days [see the page].');
    expect(streamed('[sources: none]\nWe rent surfboards all winter!', size)).toBe('');
    // No verdict: the text as written, brackets and all (an address or words in the brackets are no verdict).
    expect(streamed('Hello [there] and [Source: https://help.example/1] and [s', size)).toBe('Hello [there] and [Source: https://help.example/1] and [s');
    expect(streamed('See [[sources: 2]\nthis', size)).toBe('See [this');
  });

  it('reads the line at the start, on a line of its own later, any case, with or without a line break', () => {
    expect(readVerdict('[sources: 1, 3]\nAnswer.')).toEqual({ verdict: { kind: 'cited', numbers: [1, 3] }, text: 'Answer.' });
    expect(readVerdict('[Source: none] Answer.')).toEqual({ verdict: { kind: 'none' }, text: 'Answer.' });
    expect(readVerdict('Answer.\n[sources: 2]')).toEqual({ verdict: { kind: 'cited', numbers: [2] }, text: 'Answer.' });
    expect(readVerdict('Just an answer.')).toEqual({ verdict: undefined, text: 'Just an answer.' });
    expect(readVerdict('Read [source: our FAQ page].\n[sources: 2 and 4]')).toEqual({
      verdict: { kind: 'cited', numbers: [2, 4] },
      text: 'Read [source: our FAQ page].',
    });
  });

  it("says the service's words in the customer's language for `none`, with a person offered only where one can be", () => {
    expect(readerReply('[sources: none]\nSure, surfboards!', SOURCES, { language: 'es', offerPerson: true, markdownLinks: false })).toEqual({
      text: 'Lo siento, no tengo esa información. ¿Quiere que le ponga en contacto con una persona de nuestro equipo?',
      declined: true,
    });
    expect(readerReply('[sources: none]', SOURCES, { language: 'en', offerPerson: false, markdownLinks: false }).text).toBe(
      "I'm sorry, I don't have that information.",
    );
  });

  it('writes the "Source:" line from the cited passages: at most two, titles without link syntax, only http(s) addresses', () => {
    const plain = readerReply('[sources: 2, 1, 1, 3]\nTwo to three days.', SOURCES, { language: 'en', offerPerson: true, markdownLinks: false });
    expect(plain).toEqual({
      text: 'Two to three days.',
      sources: 'Source: Returns and refunds · How long does delivery take? – https://help.example/shipping',
      declined: false,
    });
    const unsafe = readerReply('[sources: 3, 9]\nTen years.', SOURCES, { language: 'de', offerPerson: true, markdownLinks: true });
    expect(unsafe.sources).toBe('Quelle: Warranty');
    const linked = readerReply('[sources: 4, 1]\nYes.', SOURCES, { language: 'fr', offerPerson: true, markdownLinks: true });
    expect(linked.sources).toBe(
      'Source: [Shipping Austria](https://help.example/at%28ship%29) · [How long does delivery take?](https://help.example/shipping)',
    );
    // The widget renders exactly those two links, to those two addresses.
    const runs = parseRichText(linked.sources!).flatMap((block) => (block.kind === 'paragraph' ? block.lines.flat() : []));
    expect(runs.filter((run) => run.kind === 'link')).toEqual([
      { kind: 'link', text: 'Shipping Austria', href: 'https://help.example/at%28ship%29' },
      { kind: 'link', text: 'How long does delivery take?', href: 'https://help.example/shipping' },
    ]);
  });
});
