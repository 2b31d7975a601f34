/**
 * Parses assistant text into a small tree of blocks and inline runs: paragraphs, `- ` lists,
 * `**bold**`, `[text](https://…)` links and bare http(s) URLs. It only ever produces text and
 * vetted http(s) addresses; everything else (HTML tags, `javascript:` links, images) stays
 * literal text. Pure and DOM-free, so it is unit-tested in Node; `render-rich-text.ts` turns
 * the tree into DOM nodes.
 */

export type Inline = { kind: 'text'; text: string } | { kind: 'bold'; children: Inline[] } | { kind: 'link'; text: string; href: string };

export type Block = { kind: 'paragraph'; lines: Inline[][] } | { kind: 'list'; items: Inline[][] };

const LIST_ITEM = /^\s*[-*\u2022]\s+(.*)$/;
// One alternation, tried left to right at each position: bold, markdown link, bare URL.
const INLINE = /\*\*([^*\n]+?)\*\*|\[([^\]\n]+)\]\(([^()\s]+)\)|https?:\/\/[^\s<>"'`]+/gi;
const TRAILING_PUNCTUATION = /[.,;:!?]+$/;

/** The normalised address when `raw` is an absolute http(s) URL without credentials. */
export function safeHttpUrl(raw: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  // "https://bank.example@evil.example" reads as one host and goes to another.
  if (url.username || url.password) return undefined;
  return url.href;
}

export function parseRichText(text: string): Block[] {
  const blocks: Block[] = [];
  let current: Block | undefined;
  for (const line of text.replace(/\r\n?/g, '\n').split('\n')) {
    if (line.trim() === '') {
      current = undefined;
      continue;
    }
    const item = LIST_ITEM.exec(line);
    if (item) {
      if (current?.kind !== 'list') {
        current = { kind: 'list', items: [] };
        blocks.push(current);
      }
      current.items.push(parseInline(item[1] ?? ''));
    } else {
      if (current?.kind !== 'paragraph') {
        current = { kind: 'paragraph', lines: [] };
        blocks.push(current);
      }
      current.lines.push(parseInline(line.trim()));
    }
  }
  return blocks;
}

export function parseInline(text: string): Inline[] {
  const runs: Inline[] = [];
  const pushText = (value: string): void => {
    if (value === '') return;
    const last = runs[runs.length - 1];
    if (last?.kind === 'text') last.text += value;
    else runs.push({ kind: 'text', text: value });
  };
  let position = 0;
  for (const match of text.matchAll(INLINE)) {
    const start = match.index;
    let matched = match[0];
    const [, bold, linkText, linkTarget] = match;
    pushText(text.slice(position, start));
    if (bold !== undefined) {
      runs.push({ kind: 'bold', children: parseInline(bold) });
    } else if (linkText !== undefined && linkTarget !== undefined) {
      const href = safeHttpUrl(linkTarget);
      if (href) runs.push({ kind: 'link', text: linkText, href });
      else pushText(matched);
    } else {
      matched = trimBareUrl(matched);
      const href = safeHttpUrl(matched);
      if (href) runs.push({ kind: 'link', text: matched, href });
      else pushText(matched);
    }
    position = start + matched.length;
  }
  pushText(text.slice(position));
  return runs;
}

// A sentence often ends right after a URL: "see https://example.com/docs.", "(https://x.io)" or
// "[https://x.io/a]": trailing punctuation, and a closing bracket the URL never opened, are not part of it.
const CLOSERS: Record<string, string> = { ')': '(', ']': '[' };

function trimBareUrl(url: string): string {
  let trimmed = url.replace(TRAILING_PUNCTUATION, '');
  for (;;) {
    const closer = trimmed.slice(-1);
    const opener = CLOSERS[closer];
    if (opener === undefined || count(trimmed, opener) >= count(trimmed, closer)) return trimmed;
    trimmed = trimmed.slice(0, -1).replace(TRAILING_PUNCTUATION, '');
  }
}

function count(text: string, character: string): number {
  return text.split(character).length - 1;
}
