/**
 * One crawled page's parts the crawl needs besides fetching it: the owner id a page is known
 * by, whether a URL is in the source's include/exclude scope, the page's text and links out of
 * its body (HTML, PDF, Markdown or plain text), and the links stored with it so a re-crawl
 * answered 304 follows them all.
 */
import { createHash } from 'node:crypto';
import { checkDocument, type ExtractedPage } from './extract.js';
import { readHtml, readPdf } from './extract-guard.js';
import type { SourceRecord } from './model.js';
import type { FetchOutcome } from './site-fetch.js';
import { sameOriginAllowed } from './site-fetch.js';

/**
 * The most links stored with a page. A page with more is stored without its validators, so
 * every re-crawl fetches it whole and follows all of its links (a 304 never stands for them).
 */
export const MAX_STORED_LINKS = 5_000;

export const pageOwnerId = (url: string) => `page:${createHash('sha256').update(url).digest('hex').slice(0, 24)}`;

function patternMatches(pattern: string, path: string): boolean {
  const regex = new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}`);
  return regex.test(path);
}

export function inScope(url: URL, source: Pick<SourceRecord, 'include' | 'exclude'>): boolean {
  const path = url.pathname + url.search;
  if (source.exclude?.some((pattern) => patternMatches(pattern, path))) return false;
  return !source.include?.length || source.include.some((pattern) => patternMatches(pattern, path));
}

/** The page's links a crawl of this source may follow: same origin, in scope, each once. */
export function followableLinks(links: readonly string[], origin: string, source: Pick<SourceRecord, 'include' | 'exclude'>): string[] {
  const out = new Set<string>();
  for (const link of links) {
    try {
      const url = new URL(link);
      if (sameOriginAllowed(url, origin) && inScope(url, source)) out.add(url.toString());
    } catch {
      // Not a URL: never followed.
    }
  }
  return [...out];
}

/**
 * A fetched body as a page: undefined for a type the crawl does not read (an image); throws
 * when the body is one it reads but cannot (a broken PDF, a page past the reading budget).
 */
export async function readPage(outcome: Extract<FetchOutcome, { kind: 'ok' }>): Promise<ExtractedPage | undefined> {
  const type = outcome.contentType.toLowerCase();
  if (type.includes('pdf')) {
    checkDocument('application/pdf', outcome.body);
    const pdf = await readPdf(outcome.body);
    const title = decodeURIComponent(new URL(outcome.url).pathname.split('/').at(-1) ?? outcome.url);
    return { title, text: pdf.text, links: [], noindex: /noindex/i.test(outcome.robots ?? ''), nofollow: true, canonical: undefined };
  }
  if (type.includes('html') || type === '') {
    return readHtml(new TextDecoder().decode(outcome.body), outcome.url, outcome.robots);
  }
  if (type.startsWith('text/plain') || type.startsWith('text/markdown')) {
    const title = new URL(outcome.url).pathname;
    return { title, text: new TextDecoder().decode(outcome.body), links: [], noindex: false, nofollow: true, canonical: undefined };
  }
  return undefined;
}
