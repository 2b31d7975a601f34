/**
 * A page nested too deep is refused by a scan of its markup before any parser sees it (a DOM
 * parser spends seconds on a hundred thousand levels), with the reason the parsed check gives;
 * the scan follows an HTML parser closely enough never to refuse a real page: void elements,
 * elements whose end tag may be left out, SVG's self-closing shapes, comments, scripts, stray
 * closing tags and a lone "<" in text open nothing.
 */
import { jest } from '@jest/globals';
import { htmlDepthOver } from '../../src/knowledge/html-depth.js';

/** linkedom as the extractor loads it, recording each page it is handed (and parsing nothing). */
const parsed: number[] = [];
jest.unstable_mockModule('linkedom', () => ({
  parseHTML: (html: string) => {
    parsed.push(html.length);
    throw new Error('the parser was reached');
  },
}));
const { extractHtml } = await import('../../src/knowledge/extract.js');

const page = (body: string) => `<!doctype html><html><head><title>T</title></head><body>${body}</body></html>`;
const nested = (levels: number, open = '<div>', close = '</div>') => `${open.repeat(levels)}deep${close.repeat(levels)}`;

describe('the depth scan before the parser', () => {
  it('refuses a page nested 100,000 levels deep without handing it to the parser, naming why', async () => {
    await expect(extractHtml(page(nested(100_000)), 'https://help.example/deep')).rejects.toThrow('the page nests its elements deeper than 400 levels');
    // `<div/>` nests like `<div>` in HTML; closing tags of elements that are not open close nothing.
    await expect(extractHtml(page('<div/>'.repeat(1_000)), 'https://help.example/slash')).rejects.toThrow('deeper than 400 levels');
    await expect(extractHtml(page(nested(1_000, '<div></span>')), 'https://help.example/stray')).rejects.toThrow('deeper than 400 levels');
    expect(parsed).toEqual([]);
    // A page within the limit goes on to the parser.
    await expect(extractHtml(page(nested(400)), 'https://help.example/ok')).rejects.toThrow('the parser was reached');
    expect(parsed).toHaveLength(1);
  });

  it('counts to the limit exactly', () => {
    expect(htmlDepthOver(page(nested(397)), 400)).toBe(false);
    expect(htmlDepthOver(page(nested(401)), 400)).toBe(true);
    expect(htmlDepthOver(page(nested(401, '<DIV class="a>b">', '</DIV>')), 400)).toBe(true);
  });

  it('never refuses what a parser keeps shallow', () => {
    const shallow = [
      '<p>para'.repeat(2_000),
      `<ul>${'<li>item'.repeat(2_000)}</ul>`,
      `<table>${'<tr><td>a<td>b'.repeat(2_000)}</table>`,
      'line<br>'.repeat(2_000) + '<img src="a.png">'.repeat(2_000),
      `<svg viewBox="0 0 1 1">${'<path d="M0 0"/>'.repeat(2_000)}</svg>`,
      `<script>const s = "${'<div>'.repeat(2_000)}";</script>`,
      `<!-- ${'<div>'.repeat(2_000)} -->`,
      `<textarea>${'<div>'.repeat(2_000)}</textarea>`,
      'a < b and c <= d '.repeat(2_000),
      '</div>'.repeat(2_000) + nested(300),
      '<div>'.repeat(300) + '</div>'.repeat(300) + '<div>'.repeat(300),
    ];
    for (const body of shallow) expect(htmlDepthOver(page(body), 400)).toBe(false);
  });
});
