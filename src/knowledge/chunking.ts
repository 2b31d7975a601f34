/**
 * Splits extracted text (Markdown-style `#` headings) into passages by heading, each keeping
 * its page title, heading path and URL. A section longer than `maxChars` is cut at paragraph
 * (then sentence) boundaries; empty sections are dropped.
 */
import type { ChunkRecord } from './model.js';

const CHUNK_MAX_CHARS = 1500;

interface Section {
  path: string[];
  lines: string[];
}

function sections(text: string): Section[] {
  const out: Section[] = [];
  const path: { level: number; text: string }[] = [];
  let current: Section = { path: [], lines: [] };
  for (const line of text.split('\n')) {
    const [, hashes, title] = /^(#{1,6})\s+(.+?)\s*#*\s*$/.exec(line) ?? [];
    if (hashes && title) {
      out.push(current);
      const level = hashes.length;
      while ((path.at(-1)?.level ?? 0) >= level) path.pop();
      path.push({ level, text: title.trim() });
      current = { path: path.map((entry) => entry.text), lines: [] };
      continue;
    }
    current.lines.push(line);
  }
  out.push(current);
  return out.filter((section) => section.lines.join('').trim() !== '');
}

/** Pieces of `body` of at most `maxChars`, cut between paragraphs, else sentences, else anywhere. */
function pieces(body: string, maxChars: number): string[] {
  if (body.length <= maxChars) return [body];
  const out: string[] = [];
  let current = '';
  const units = body.split(/\n{2,}/).flatMap((paragraph) => (paragraph.length <= maxChars ? [paragraph] : paragraph.split(/(?<=[.!?])\s+/)));
  for (const unit of units) {
    for (let start = 0; start < unit.length; start += maxChars) {
      const part = unit.slice(start, start + maxChars);
      if (current && current.length + part.length + 2 > maxChars) {
        out.push(current);
        current = '';
      }
      current = current ? `${current}\n\n${part}` : part;
    }
  }
  if (current) out.push(current);
  return out;
}

export function chunkText(
  text: string,
  meta: { owner: string; title: string; url: string; sites: readonly string[]; language?: string | undefined },
  maxChars = CHUNK_MAX_CHARS,
): ChunkRecord[] {
  const chunks: ChunkRecord[] = [];
  for (const section of sections(text.replace(/\r\n?/g, '\n'))) {
    const body = section.lines
      .join('\n')
      .replace(/\n{3,}/g, '\n\n')
      .trim();
    for (const piece of pieces(body, maxChars)) {
      chunks.push({
        _id: `${meta.owner}#${chunks.length}`,
        owner: meta.owner,
        title: meta.title,
        headingPath: section.path,
        url: meta.url,
        text: piece,
        sites: [...meta.sites],
        ...(meta.language ? { language: meta.language } : {}),
      });
    }
  }
  return chunks;
}
