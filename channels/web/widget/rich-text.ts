/**
 * Parses assistant text into a small tree of blocks and inline runs: paragraphs, `- ` and `1. `
 * lists, `#` headings (shown bold), fenced code blocks (``` lines; literal, monospaced), `**bold**`, `*italic*`/`_italic_`, `` `code` `` (literal),
 * `[text](https://…)` links and bare http(s) URLs. While a reply streams, `closeOpenMarkers`
 * closes what is still open, so no raw `**` shows before its pair arrives. It only ever produces text and
 * vetted http(s) addresses; everything else (HTML tags, `javascript:` links, images) stays
 * literal text. Pure and DOM-free, so it is unit-tested in Node; `render-rich-text.ts` turns
 * the tree into DOM nodes.
 */

export type Inline =
  | { kind: 'text'; text: string }
  | { kind: 'bold'; children: Inline[] }
  | { kind: 'italic'; children: Inline[] }
  | { kind: 'code'; text: string }
  | { kind: 'link'; text: string; href: string };

export type Block =
  | { kind: 'paragraph'; lines: Inline[][] }
  | { kind: 'list' | 'ordered'; items: Inline[][]; start?: number }
  | { kind: 'heading'; line: Inline[] }
  /** A fenced block's lines, as written (an unclosed fence runs to the end: a reply still streaming). */
  | { kind: 'codeBlock'; text: string };

const FENCE = /^\s{0,3}(`{3,}|~{3,})/;

const LIST_ITEM = /^\s*[-*\u2022]\s+(.*)$/;
const ORDERED_ITEM = /^\s*(\d{1,9})[.)]\s+(.*)$/;
const HEADING = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/;
// One alternation, tried left to right at each position: code, bold, italic (* or _ at word
// edges), markdown link, bare URL.
const INLINE =
  /`([^`\n]+)`|\*\*([^*\n]+?)\*\*|\*(?![\s*])([^*\n]*?[^\s*])\*|(?<![\p{L}\p{N}_])_(?![\s_])([^_\n]*?[^\s_])_(?![\p{L}\p{N}_])|\[([^\]\n]+)\]\(([^()\s]+)\)|https?:\/\/[^\s<>"'`]+/giu;
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
  let openFence: { marker: string; block: { kind: 'codeBlock'; text: string }; lines: string[] } | undefined;
  for (const line of text.replace(/\r\n?/g, '\n').split('\n')) {
    const fenced = FENCE.exec(line)?.[1];
    if (openFence) {
      // Closed by a line of only a openFence of the same character, at least as long.
      if (fenced && fenced[0] === openFence.marker[0] && fenced.length >= openFence.marker.length && line.trim() === fenced) {
        openFence = undefined;
      } else {
        openFence.lines.push(line);
        openFence.block.text = openFence.lines.join('\n');
      }
      continue;
    }
    if (fenced) {
      // What follows the opening openFence (a language name) is not shown.
      openFence = { marker: fenced, block: { kind: 'codeBlock', text: '' }, lines: [] };
      blocks.push(openFence.block);
      current = undefined;
      continue;
    }
    if (line.trim() === '') {
      current = undefined;
      continue;
    }
    const heading = HEADING.exec(line);
    const item = LIST_ITEM.exec(line);
    const ordered = ORDERED_ITEM.exec(line);
    if (heading) {
      blocks.push({ kind: 'heading', line: parseInline(heading[1] ?? '') });
      current = undefined;
    } else if (item || ordered) {
      const kind = item ? 'list' : 'ordered';
      if (current?.kind !== kind) {
        current = { kind, items: [], ...(ordered ? { start: Number(ordered[1]) } : {}) };
        blocks.push(current);
      }
      current.items.push(parseInline((item ? item[1] : ordered?.[2]) ?? ''));
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
    const [, code, bold, star, underscore, linkText, linkTarget] = match;
    pushText(text.slice(position, start));
    if (code !== undefined) {
      runs.push({ kind: 'code', text: code });
    } else if (bold !== undefined) {
      runs.push({ kind: 'bold', children: parseInline(bold) });
    } else if (star !== undefined || underscore !== undefined) {
      runs.push({ kind: 'italic', children: parseInline(star ?? underscore ?? '') });
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

/**
 * Text still streaming, with what it has opened and not yet closed (code, bold, italic) closed
 * at its end, and a marker it ends on dropped: "Our **best" reads as bold "best", never "**best".
 */
export function closeOpenMarkers(text: string): string {
  // Inside a code block still open, everything is literal: nothing to close.
  const fences = text.split(/\r?\n/).filter((line) => FENCE.test(line)).length;
  if (fences % 2 === 1) return text;
  // A line that so far is only a bullet or a heading's hashes shows nothing yet.
  const trimmed = text.replace(/(^|\n)[ \t]*(?:[-*\u2022]|#{1,6}|\d{1,9}[.)]?)[ \t]*$/, '$1');
  const lineStart = trimmed.lastIndexOf('\n') + 1;
  const line = trimmed.slice(lineStart);
  // A list bullet or heading hash at the start of the line is no emphasis.
  const offset = lineStart + (/^\s*(?:[-*\u2022]\s+|#{1,6}\s+)/.exec(line)?.[0].length ?? 0);
  // Inline runs never cross a line: only the line being written can have something open.
  const open: { marker: string; at: number }[] = [];
  for (let index = offset; index < trimmed.length; index += 1) {
    const character = trimmed[index] ?? '';
    const top = open[open.length - 1]?.marker;
    if (top === '`') {
      if (character === '`') open.pop();
      continue;
    }
    const marker = character === '*' && trimmed[index + 1] === '*' ? '**' : character;
    if (marker === '`' || marker === '**' || marker === '*' || (marker === '_' && !/[\p{L}\p{N}]/u.test(trimmed[index - 1] ?? ''))) {
      if (top === marker) open.pop();
      else if (trimmed[index + marker.length] !== ' ') open.push({ marker, at: index });
      index += marker.length - 1;
    } else if (marker === '_' && top === '_') {
      open.pop();
    }
  }
  // An opener with nothing after it yet is dropped; the others are closed.
  let end = trimmed.length;
  while (open.length > 0 && (open[open.length - 1]?.at ?? 0) + (open[open.length - 1]?.marker.length ?? 0) >= end) end = open.pop()?.at ?? end;
  return (
    trimmed.slice(0, end) +
    open
      .map((entry) => entry.marker)
      .reverse()
      .join('')
  );
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

/** The text as plain words (no `**`, backticks or fences): for a one-line preview of a reply. */
export function plainText(text: string): string {
  const words = (runs: readonly Inline[]): string =>
    runs.map((run) => (run.kind === 'bold' || run.kind === 'italic' ? words(run.children) : run.text)).join('');
  return parseRichText(text)
    .map((block) => {
      if (block.kind === 'codeBlock') return block.text;
      if (block.kind === 'heading') return words(block.line);
      if (block.kind === 'paragraph') return block.lines.map(words).join(' ');
      return block.items.map(words).join(', ');
    })
    .join(' ');
}
