/**
 * Text out of what a business publishes, without running any JavaScript: HTML through linkedom
 * and Readability (site header, navigation, footer and cookie banners left out), its headings
 * kept as Markdown `#` lines so chunking can split by them; PDF text through unpdf; Markdown and
 * plain text as they are. A file's type is decided by its bytes (the media layer's sniffer for
 * PDF; UTF-8 text without NULs for the rest), never by the declared type alone. What a file may
 * cost to read is capped before the expensive part: HTML nested deeper than `MAX_HTML_DEPTH`
 * elements (Readability's time grows with the cube of the depth; a scan of the markup refuses it
 * before the parser, `html-depth.ts`, and the parsed tree is checked again), a PDF of more than
 * `MAX_PDF_PAGES` pages or whose compressed streams inflate to more than `MAX_PDF_INFLATED_BYTES`;
 * each is refused with the reason. `extract-thread.ts` runs these in a worker thread with a time
 * and memory budget.
 */
import type { Readability } from '@mozilla/readability';
import type { parseHTML } from 'linkedom';
import { inflateSync } from 'node:zlib';
import { extractText, getDocumentProxy } from 'unpdf';
import { loadOnce } from '../load-once.js';
import { checkContent, MediaRejectedError, SNIFF_BYTES } from '../media/content-check.js';
import { htmlDepthOver } from './html-depth.js';

export type TextKind = 'pdf' | 'html' | 'markdown' | 'text';

export interface ExtractedPage {
  title: string;
  /** Markdown-style text: `#` headings, paragraphs. */
  text: string;
  /** Absolute link targets, when the page lets them be followed. */
  links: string[];
  canonical?: string | undefined;
  noindex: boolean;
  nofollow: boolean;
}

const MAX_HTML_DEPTH = 400;
const MAX_PDF_PAGES = 2_000;
const MAX_PDF_INFLATED_BYTES = 100 * 1024 * 1024;

const BLOCKS = new Set(['P', 'LI', 'TD', 'TH', 'PRE', 'BLOCKQUOTE', 'DT', 'DD', 'FIGCAPTION', 'CAPTION']);
const HEADINGS = /^H([1-6])$/;
const SKIPPED = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'NAV', 'FOOTER', 'HEADER', 'ASIDE', 'FORM', 'BUTTON', 'SVG']);

interface DomElement {
  getAttribute(name: string): string | null;
  textContent: string | null;
}
interface DomDocument {
  querySelector(selector: string): DomElement | null;
  querySelectorAll(selector: string): ArrayLike<DomElement>;
}

interface DomNode {
  nodeType: number;
  nodeName: string;
  textContent: string | null;
  childNodes: ArrayLike<DomNode>;
}

/** The element tree's depth, walked without recursion, stopping once past `limit`. */
function depthOver(root: DomNode, limit: number): boolean {
  const stack: [DomNode, number][] = [[root, 0]];
  for (let entry = stack.pop(); entry; entry = stack.pop()) {
    const [node, depth] = entry;
    if (depth > limit) return true;
    for (const child of Array.from(node.childNodes)) if (child.nodeType === 1) stack.push([child, depth + 1]);
  }
  return false;
}

const squash = (text: string) => text.replace(/\s+/g, ' ').trim();

/** The element tree as Markdown-ish lines: headings become `#` lines, block elements paragraphs. */
function toLines(root: DomNode): string[] {
  const lines: string[] = [];
  const walk = (node: DomNode) => {
    const name = node.nodeName.toUpperCase();
    if (SKIPPED.has(name)) return;
    const heading = HEADINGS.exec(name);
    if (heading) {
      const text = squash(node.textContent ?? '');
      if (text) lines.push('', `${'#'.repeat(Number(heading[1]))} ${text}`, '');
      return;
    }
    if (BLOCKS.has(name)) {
      const text = squash(node.textContent ?? '');
      if (text) lines.push(name === 'LI' ? `- ${text}` : text, '');
      return;
    }
    if (node.nodeType === 3) {
      const text = squash(node.textContent ?? '');
      if (text) lines.push(text);
      return;
    }
    for (const child of Array.from(node.childNodes)) walk(child);
  };
  walk(root);
  return lines;
}

function metaRobots(document: DomDocument): { noindex: boolean; nofollow: boolean } {
  const values = Array.from(document.querySelectorAll('meta[name]'))
    .filter((meta) => /^(robots|googlebot)$/i.test(meta.getAttribute('name') ?? ''))
    .map((meta) => (meta.getAttribute('content') ?? '').toLowerCase());
  const all = values.join(',');
  return { noindex: /\b(noindex|none)\b/.test(all), nofollow: /\b(nofollow|none)\b/.test(all) };
}

/** linkedom and Readability, loaded with the first page read: a process that reads none never loads them. */
const loadParsers = loadOnce(async (): Promise<{ parseHTML: typeof parseHTML; Readability: typeof Readability }> => {
  const [linkedom, readability] = await Promise.all([import('linkedom'), import('@mozilla/readability')]);
  return { parseHTML: linkedom.parseHTML, Readability: readability.Readability };
});

/** An HTML page's main content, title, links, canonical URL and robots directives. */
export async function extractHtml(html: string, pageUrl: string, robotsHeader?: string | null): Promise<ExtractedPage> {
  const tooDeep = () => new MediaRejectedError('unreadable', `the page nests its elements deeper than ${MAX_HTML_DEPTH} levels`);
  // A scan of the markup first: a page nested deep enough to cost the parser seconds is refused in milliseconds.
  if (htmlDepthOver(html, MAX_HTML_DEPTH)) throw tooDeep();
  const { parseHTML, Readability } = await loadParsers();
  const { document: parsed } = parseHTML(html);
  if (depthOver(parsed as unknown as DomNode, MAX_HTML_DEPTH)) throw tooDeep();
  const document = parsed as unknown as DomDocument;
  const robots = metaRobots(document);
  const header = (robotsHeader ?? '').toLowerCase();
  const noindex = robots.noindex || /\b(noindex|none)\b/.test(header);
  const nofollow = robots.nofollow || /\b(nofollow|none)\b/.test(header);
  const resolve = (href: string | null | undefined) => {
    if (!href) return undefined;
    try {
      const url = new URL(href, pageUrl);
      url.hash = '';
      return url.toString();
    } catch {
      return undefined;
    }
  };
  const canonical = resolve(document.querySelector('link[rel="canonical"]')?.getAttribute('href'));
  const links = nofollow
    ? []
    : Array.from(document.querySelectorAll('a[href]'))
        .filter((anchor) => !/\bnofollow\b/i.test(anchor.getAttribute('rel') ?? ''))
        .map((anchor) => resolve(anchor.getAttribute('href')))
        .filter((href): href is string => href !== undefined);
  const pageTitle = squash(document.querySelector('title')?.textContent ?? '');
  const article = new Readability(parsed as unknown as ConstructorParameters<typeof Readability>[0], { charThreshold: 50 }).parse();
  let text = '';
  if (article?.content) {
    const { document: content } = parseHTML(`<html><body>${article.content}</body></html>`);
    text = toLines(content.body as unknown as DomNode).join('\n');
  }
  if (!text.trim()) {
    const { document: again } = parseHTML(html);
    text = toLines(again.body as unknown as DomNode).join('\n');
  }
  return {
    title: squash(article?.title ?? '') || pageTitle,
    text: text.replace(/\n{3,}/g, '\n\n').trim(),
    links: [...new Set(links)],
    ...(canonical ? { canonical } : {}),
    noindex,
    nofollow,
  };
}

/**
 * Refuses a PDF whose Flate-compressed streams inflate to more than MAX_PDF_INFLATED_BYTES in
 * all, inflating each (output capped) before the PDF reader would hold them all at once.
 */
function checkInflation(bytes: Uint8Array): void {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let total = 0;
  for (let at = buffer.indexOf('stream', 0, 'latin1'); at >= 0; at = buffer.indexOf('stream', at + 6, 'latin1')) {
    if (buffer.subarray(Math.max(0, at - 3), at).toString('latin1') === 'end') continue;
    const dictionary = buffer.subarray(Math.max(0, at - 512), at).toString('latin1');
    if (!dictionary.slice(dictionary.lastIndexOf('<<')).includes('/FlateDecode')) continue;
    let start = at + 6;
    if (buffer[start] === 0x0d) start += 1;
    if (buffer[start] === 0x0a) start += 1;
    const end = buffer.indexOf('endstream', start, 'latin1');
    if (end < 0) break;
    try {
      total += inflateSync(buffer.subarray(start, end), { maxOutputLength: MAX_PDF_INFLATED_BYTES - total + 1 }).length;
    } catch (error) {
      if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') total = MAX_PDF_INFLATED_BYTES + 1;
    }
    if (total > MAX_PDF_INFLATED_BYTES) {
      throw new MediaRejectedError('too-large', `the PDF's compressed content inflates to more than ${MAX_PDF_INFLATED_BYTES / 1024 / 1024} MB`);
    }
    at = end;
  }
}

export async function extractPdf(bytes: Uint8Array): Promise<{ text: string; pages: number }> {
  checkInflation(bytes);
  const pdf = await getDocumentProxy(new Uint8Array(bytes));
  if (pdf.numPages > MAX_PDF_PAGES) {
    await pdf.cleanup();
    throw new MediaRejectedError('too-large', `the PDF has ${pdf.numPages} pages, more than ${MAX_PDF_PAGES}`);
  }
  const { text, totalPages } = await extractText(pdf, { mergePages: false });
  await pdf.cleanup();
  return { text: text.map((page) => page.trim()).join('\n\n'), pages: totalPages };
}

const DECLARED: Record<string, TextKind> = {
  'application/pdf': 'pdf',
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'text/markdown': 'markdown',
  'text/x-markdown': 'markdown',
  'text/plain': 'text',
};

const looksLikeHtml = (text: string) => /^\s*(<!doctype html|<html[\s>]|<head[\s>]|<body[\s>])/i.test(text);

/**
 * The kind of an uploaded file, checked by its content: a PDF must be one by its signature, a
 * text kind must be UTF-8 without NUL bytes (an HTML declaration must look like HTML). Throws
 * `MediaRejectedError('unsupported-type')` when the bytes and the declared type disagree.
 */
export function checkDocument(declaredType: string, bytes: Uint8Array): { kind: TextKind; text?: string } {
  const base = (declaredType.split(';')[0] ?? '').trim().toLowerCase();
  const kind = DECLARED[base];
  if (!kind) throw new MediaRejectedError('unsupported-type', `unsupported document type ${base || '(none)'}: expected PDF, HTML, Markdown or plain text`);
  const head = bytes.subarray(0, SNIFF_BYTES);
  if (kind === 'pdf') {
    checkContent('application/pdf', head);
    return { kind };
  }
  if (bytes.includes(0)) throw new MediaRejectedError('unsupported-type', `declared ${base}, but the content is binary`);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new MediaRejectedError('unsupported-type', `declared ${base}, but the content is not UTF-8 text`);
  }
  text = text.replace(/^\uFEFF/, '');
  if (kind === 'html' && !looksLikeHtml(text) && !/<(p|h[1-6]|div|article)[\s>]/i.test(text)) {
    throw new MediaRejectedError('unsupported-type', 'declared text/html, but the content is not HTML');
  }
  return { kind, text };
}
