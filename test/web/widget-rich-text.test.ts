/**
 * The widget's reading of assistant text, in Node: which runs become formatting and links, and
 * that everything else — HTML, scripts, non-http(s) links, look-alike addresses — stays text.
 */
import { describe, expect, test } from '@jest/globals';
import { closeOpenMarkers, parseInline, parseRichText, safeHttpUrl } from '../../channels/web/widget/rich-text.js';

describe('blocks', () => {
  test('blank lines separate paragraphs; single newlines stay inside one', () => {
    expect(parseRichText('Hello there.\nSecond line.\n\nNew paragraph.')).toEqual([
      { kind: 'paragraph', lines: [[{ kind: 'text', text: 'Hello there.' }], [{ kind: 'text', text: 'Second line.' }]] },
      { kind: 'paragraph', lines: [[{ kind: 'text', text: 'New paragraph.' }]] },
    ]);
  });

  test('"- ", "* " and "• " lines form one list, even right after a paragraph line', () => {
    expect(parseRichText('Options:\n- Berths\n* Fuel\r\n• Showers\nThat is all.')).toEqual([
      { kind: 'paragraph', lines: [[{ kind: 'text', text: 'Options:' }]] },
      {
        kind: 'list',
        items: [[{ kind: 'text', text: 'Berths' }], [{ kind: 'text', text: 'Fuel' }], [{ kind: 'text', text: 'Showers' }]],
      },
      { kind: 'paragraph', lines: [[{ kind: 'text', text: 'That is all.' }]] },
    ]);
  });

  test('a line starting with bold is not a list item', () => {
    expect(parseRichText('**Note:** closed on Sunday')[0]).toEqual({
      kind: 'paragraph',
      lines: [
        [
          { kind: 'bold', children: [{ kind: 'text', text: 'Note:' }] },
          { kind: 'text', text: ' closed on Sunday' },
        ],
      ],
    });
  });

  test('empty and whitespace-only text gives no blocks', () => {
    expect(parseRichText('')).toEqual([]);
    expect(parseRichText(' \n\n  ')).toEqual([]);
  });
});

describe('inline runs', () => {
  test('bold may contain a link', () => {
    expect(parseInline('**see https://harbour.example/a**')).toEqual([
      {
        kind: 'bold',
        children: [
          { kind: 'text', text: 'see ' },
          { kind: 'link', text: 'https://harbour.example/a', href: 'https://harbour.example/a' },
        ],
      },
    ]);
  });

  test('markdown links keep their text; bare URLs lose trailing punctuation and unbalanced brackets', () => {
    expect(parseInline('Read [the guide](https://harbour.example/guide), or (https://harbour.example/fees).')).toEqual([
      { kind: 'text', text: 'Read ' },
      { kind: 'link', text: 'the guide', href: 'https://harbour.example/guide' },
      { kind: 'text', text: ', or (' },
      { kind: 'link', text: 'https://harbour.example/fees', href: 'https://harbour.example/fees' },
      { kind: 'text', text: ').' },
    ]);
    expect(parseInline('https://en.example/wiki/Quay_(harbour)')).toEqual([
      { kind: 'link', text: 'https://en.example/wiki/Quay_(harbour)', href: 'https://en.example/wiki/Quay_(harbour)' },
    ]);
  });

  test('a bare URL followed by "]" is linked without the bracket; a bracket the URL opened stays in it', () => {
    expect(parseInline('https://x.test/a]')).toEqual([
      { kind: 'link', text: 'https://x.test/a', href: 'https://x.test/a' },
      { kind: 'text', text: ']' },
    ]);
    expect(parseInline('[see https://x.test/a].')).toEqual([
      { kind: 'text', text: '[see ' },
      { kind: 'link', text: 'https://x.test/a', href: 'https://x.test/a' },
      { kind: 'text', text: '].' },
    ]);
    expect(parseInline('(https://x.test/a]).')).toEqual([
      { kind: 'text', text: '(' },
      { kind: 'link', text: 'https://x.test/a', href: 'https://x.test/a' },
      { kind: 'text', text: ']).' },
    ]);
    expect(parseInline('https://x.test/list[1]')).toEqual([{ kind: 'link', text: 'https://x.test/list[1]', href: 'https://x.test/list[1]' }]);
  });

  test.each([
    ['an HTML tag', '<img src=x onerror=alert(1)>'],
    ['a script element', '<script>alert(1)</script>'],
    ['a javascript: link', '[click](javascript:alert(1))'],
    ['a data: link', '[click](data:text/html;base64,PHNjcmlwdD4=)'],
    ['a relative link', '[click](/admin)'],
    ['an unclosed bold', '**not bold'],
  ])('%s stays literal text', (_name, text) => {
    expect(parseInline(text)).toEqual([{ kind: 'text', text }]);
  });

  test('a URL with credentials is not made a link', () => {
    expect(parseInline('https://bank.example@evil.example/login')).toEqual([{ kind: 'text', text: 'https://bank.example@evil.example/login' }]);
  });
});

describe('safeHttpUrl', () => {
  test('accepts only absolute http(s) URLs, normalised', () => {
    expect(safeHttpUrl('HTTPS://Harbour.Example/a b')).toBe('https://harbour.example/a%20b');
    expect(safeHttpUrl('http://harbour.example')).toBe('http://harbour.example/');
    for (const refused of ['javascript:alert(1)', 'JaVaScRiPt:alert(1)', 'ftp://harbour.example', 'mailto:a@b.example', '//harbour.example', 'not a url']) {
      expect(safeHttpUrl(refused)).toBeUndefined();
    }
  });
});

describe('issue 29: what models write', () => {
  test('ordered lists keep their start, headings are their own block, italics and code are runs', () => {
    expect(parseRichText('## Steps\n3. Call `+1 555`\n4) Then *wait* or _rest_')).toEqual([
      { kind: 'heading', line: [{ kind: 'text', text: 'Steps' }] },
      {
        kind: 'ordered',
        start: 3,
        items: [
          [
            { kind: 'text', text: 'Call ' },
            { kind: 'code', text: '+1 555' },
          ],
          [
            { kind: 'text', text: 'Then ' },
            { kind: 'italic', children: [{ kind: 'text', text: 'wait' }] },
            { kind: 'text', text: ' or ' },
            { kind: 'italic', children: [{ kind: 'text', text: 'rest' }] },
          ],
        ],
      },
    ]);
  });

  test('code is literal; snake_case and a lone star stay text', () => {
    expect(parseInline('`**not bold**` and file_name_here, 2 * 3')).toEqual([
      { kind: 'code', text: '**not bold**' },
      { kind: 'text', text: ' and file_name_here, 2 * 3' },
    ]);
  });

  test.each([
    ['Our **be', 'Our **be**'],
    ['Our **best*', 'Our **best**'],
    ['Our **', 'Our '],
    ['Call `+1 5', 'Call `+1 5`'],
    ['It is *rea', 'It is *rea*'],
    ['Done.\n\n##', 'Done.\n\n'],
    ['- a\n-', '- a\n'],
    ['**a** and *b*', '**a** and *b*'],
  ])('while streaming, %j is shown as %j', (partial, shown) => {
    expect(closeOpenMarkers(partial)).toBe(shown);
  });
});
