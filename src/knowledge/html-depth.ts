/**
 * How deep a page's elements nest, read off its markup in one pass before any parser sees it: a
 * page nested a hundred thousand levels deep costs a DOM parser seconds, this scan milliseconds.
 * It follows what an HTML parser does closely enough to never refuse a real page: void elements
 * (`<br>`, `<img>`), and `<x/>` inside SVG or MathML, open nothing; elements whose end tag may be left out (`<p>`,
 * `<li>`, `<td>`…) are not counted; a closing tag closes up to its own opening one, and one with
 * none open is ignored; comments, `<!…>`, `<?…>` and the text of `<script>`, `<style>`,
 * `<textarea>`, `<title>` hold no elements. What it counts never exceeds the tree's depth (the
 * check after parsing stays, exact); a page refused here is refused with the same reason, before
 * the parser's cost.
 */

const VOID = new Set(['area', 'base', 'br', 'col', 'embed', 'hr', 'img', 'input', 'link', 'meta', 'param', 'source', 'track', 'wbr', 'keygen', 'frame']);
/** End tag optional (closed by a sibling or its parent), so never counted. */
const OPTIONAL_END = new Set([
  'html',
  'head',
  'body',
  'p',
  'li',
  'dt',
  'dd',
  'option',
  'optgroup',
  'tr',
  'td',
  'th',
  'thead',
  'tbody',
  'tfoot',
  'colgroup',
  'caption',
  'rb',
  'rt',
  'rp',
  'rtc',
]);
const RAW_TEXT = new Set(['script', 'style', 'textarea', 'title', 'xmp', 'iframe', 'noembed', 'noframes', 'plaintext']);
/** Inside these, `<x/>` closes itself (SVG's paths); elsewhere an HTML parser keeps `<div/>` open. */
const FOREIGN = new Set(['svg', 'math']);
const TAG = /<(\/?)([a-zA-Z][^\s/>]{0,62})/y;
const isTagStart = (code: number) => code === 47 || (code >= 65 && code <= 90) || (code >= 97 && code <= 122);

/** Whether the markup's elements nest deeper than `limit` levels. */
export function htmlDepthOver(html: string, limit: number): boolean {
  const open: string[] = [];
  /** How many of each name are open (a closing tag with none open is skipped without a search). */
  const counts = new Map<string, number>();
  const closeUpTo = (name: string) => {
    if ((counts.get(name) ?? 0) === 0) return;
    for (let last = open.pop(); last !== undefined; last = open.pop()) {
      counts.set(last, (counts.get(last) ?? 1) - 1);
      if (last === name) return;
    }
  };
  let at = html.indexOf('<');
  while (at !== -1) {
    const next = html.charCodeAt(at + 1);
    if (html.startsWith('<!--', at)) {
      const end = html.indexOf('-->', at + 4);
      if (end === -1) return false;
      at = html.indexOf('<', end + 3);
      continue;
    }
    // "a < b" is text: only `<` before a letter, `/`, `!` or `?` starts markup.
    if (!isTagStart(next) && next !== 33 && next !== 63) {
      at = html.indexOf('<', at + 1);
      continue;
    }
    const close = html.indexOf('>', at);
    if (close === -1) return false;
    TAG.lastIndex = at;
    const tag = TAG.exec(html);
    at = html.indexOf('<', close + 1);
    if (!tag) continue;
    const name = (tag[2] ?? '').toLowerCase();
    if (tag[1]) {
      closeUpTo(name);
      continue;
    }
    if (RAW_TEXT.has(name)) {
      const end = new RegExp(`</${name}`, 'ig');
      end.lastIndex = close + 1;
      if (!end.exec(html)) return false;
      at = html.indexOf('<', end.lastIndex);
      continue;
    }
    const selfClosed = html.charAt(close - 1) === '/' && [...FOREIGN].some((foreign) => (counts.get(foreign) ?? 0) > 0);
    if (VOID.has(name) || OPTIONAL_END.has(name) || selfClosed) continue;
    open.push(name);
    counts.set(name, (counts.get(name) ?? 0) + 1);
    if (open.length > limit) return true;
  }
  return false;
}
