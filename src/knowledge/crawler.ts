/**
 * One crawl of one source: robots.txt first (a disallowed page is never fetched, whatever names
 * it), the sitemap's pages and the start URL, then links breadth-first up to the depth cap; at
 * most 2 requests at a time to the host; a page is known by its final URL after redirects, or
 * its canonical link when that is on the same origin; `noindex` pages are not indexed and
 * `nofollow` pages' links not followed; re-crawls send the stored validators (a 304 keeps the
 * page) and rewrite a page only when its text hash changed. Pages of an earlier crawl that were
 * not found again (404/410, or no longer linked) are removed; a page that failed to load is kept.
 */
import { createHash } from 'node:crypto';
import type { Logger } from '../logger.js';
import { checkDocument, extractHtml, extractPdf } from './extract.js';
import type { KnowledgeLibrary } from './library.js';
import type { SourceRecord } from './model.js';
import { fetchPage, fetchRobots, readSitemap, sameOriginAllowed } from './site-fetch.js';
import type { KnowledgeStore } from './store.js';

export interface CrawlLimits {
  maxPages: number;
  maxDepth: number;
  maxPageBytes: number;
  maxCrawlBytes: number;
  timeoutMs: number;
}

export interface CrawlReport {
  pages: number;
  fetched: number;
  unchanged: number;
  removed: number;
  errors: string[];
}

const HOST_CONCURRENCY = 2;
const MAX_ERRORS = 20;
const MAX_STORED_LINKS = 200;

const pageOwnerId = (url: string) => `page:${createHash('sha256').update(url).digest('hex').slice(0, 24)}`;

function patternMatches(pattern: string, path: string): boolean {
  const regex = new RegExp(`^${pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}`);
  return regex.test(path);
}

function inScope(url: URL, source: SourceRecord): boolean {
  const path = url.pathname + url.search;
  if (source.exclude?.some((pattern) => patternMatches(pattern, path))) return false;
  return !source.include?.length || source.include.some((pattern) => patternMatches(pattern, path));
}

export async function crawlSource(
  source: SourceRecord,
  dependencies: { store: KnowledgeStore; library: KnowledgeLibrary; limits: CrawlLimits; logger: Logger },
): Promise<CrawlReport> {
  const { store, library, limits, logger } = dependencies;
  const start = new URL(source.url);
  const origin = start.origin;
  const report: CrawlReport = { pages: 0, fetched: 0, unchanged: 0, removed: 0, errors: [] };
  const error = (message: string) => {
    if (report.errors.length < MAX_ERRORS) report.errors.push(message);
  };
  const robots = await fetchRobots(origin, { timeoutMs: limits.timeoutMs });
  const previous = new Set(source.pageIds);
  const kept = new Set<string>();
  const failedIds = new Set<string>();
  const seen = new Set<string>();
  const queue: { url: string; depth: number }[] = [];
  const enqueue = (raw: string, depth: number) => {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return;
    }
    url.hash = '';
    const key = url.toString();
    if (seen.has(key) || depth > limits.maxDepth || !sameOriginAllowed(url, origin) || !inScope(url, source)) return;
    seen.add(key);
    if (!robots.allowed(key)) return;
    queue.push({ url: key, depth });
  };
  enqueue(start.toString(), 0);
  const sitemaps = source.sitemap ? [source.sitemap] : robots.sitemaps.length > 0 ? robots.sitemaps : [`${origin}/sitemap.xml`];
  for (const sitemap of sitemaps) {
    for (const url of await readSitemap(sitemap, { origin, timeoutMs: limits.timeoutMs, maxUrls: limits.maxPages * 2, robots })) enqueue(url, 1);
  }
  let bytes = 0;
  let attempts = 0;

  const visit = async (item: { url: string; depth: number }) => {
    const known = await store.getOwner(pageOwnerId(item.url));
    const outcome = await fetchPage(item.url, {
      origin,
      maxBytes: limits.maxPageBytes,
      timeoutMs: limits.timeoutMs,
      etag: known?.etag,
      lastModified: known?.lastModified,
    });
    if (outcome.kind === 'not-modified') {
      kept.add(pageOwnerId(outcome.url));
      report.unchanged += 1;
      for (const link of known?.links ?? []) enqueue(link, item.depth + 1);
      return;
    }
    if (outcome.kind === 'gone') return;
    if (outcome.kind === 'failed') {
      error(`${item.url}: ${outcome.reason}`);
      failedIds.add(pageOwnerId(item.url));
      return;
    }
    report.fetched += 1;
    bytes += outcome.body.length;
    // The final URL after redirects is the page's name; robots apply to it too.
    if (outcome.url !== item.url && !robots.allowed(outcome.url)) return;
    seen.add(outcome.url);
    const page = await readPage(outcome);
    if (!page) return;
    if (!page.nofollow) for (const link of page.links) enqueue(link, item.depth + 1);
    if (page.noindex || !page.text.trim()) return;
    // A duplicate names its canonical page: that page is crawled (and indexed) in its place.
    if (page.canonical && page.canonical !== outcome.url && sameOriginAllowed(new URL(page.canonical), origin)) {
      enqueue(page.canonical, item.depth);
      return;
    }
    const canonical = outcome.url;
    const ownerId = pageOwnerId(canonical);
    if (kept.has(ownerId)) return;
    kept.add(ownerId);
    const result = await library.put({
      ownerId,
      kind: 'page',
      title: page.title || canonical,
      url: canonical,
      text: page.text,
      sites: source.sites ?? [],
      language: source.language,
      extra: {
        sourceId: source._id,
        etag: outcome.etag,
        lastModified: outcome.lastModified,
        bytes: outcome.body.length,
        contentType: outcome.contentType,
        links: page.nofollow ? [] : page.links.filter((link) => link.startsWith(`${origin}/`)).slice(0, MAX_STORED_LINKS),
      },
    });
    if (result.unchanged) report.unchanged += 1;
  };

  const readPage = async (outcome: Extract<Awaited<ReturnType<typeof fetchPage>>, { kind: 'ok' }>) => {
    const type = outcome.contentType.toLowerCase();
    try {
      if (type.includes('pdf')) {
        checkDocument('application/pdf', outcome.body);
        const pdf = await extractPdf(outcome.body);
        const title = decodeURIComponent(new URL(outcome.url).pathname.split('/').at(-1) ?? outcome.url);
        return { title, text: pdf.text, links: [], noindex: /noindex/i.test(outcome.robots ?? ''), nofollow: true, canonical: undefined };
      }
      if (type.includes('html') || type === '') {
        return await extractHtml(new TextDecoder().decode(outcome.body), outcome.url, outcome.robots);
      }
      if (type.startsWith('text/plain') || type.startsWith('text/markdown')) {
        const title = new URL(outcome.url).pathname;
        return { title, text: new TextDecoder().decode(outcome.body), links: [], noindex: false, nofollow: true, canonical: undefined };
      }
    } catch (readError) {
      error(`${outcome.url}: unreadable (${readError instanceof Error ? readError.message : 'error'})`);
    }
    return undefined;
  };

  const worker = async () => {
    for (;;) {
      const item = queue.shift();
      if (!item || attempts >= limits.maxPages || bytes >= limits.maxCrawlBytes) return;
      attempts += 1;
      await visit(item).catch((visitError: unknown) => {
        error(`${item.url}: ${visitError instanceof Error ? visitError.message : 'failed'}`);
        failedIds.add(pageOwnerId(item.url));
      });
    }
  };
  // At most HOST_CONCURRENCY requests to the host at a time; a worker that finds the queue
  // empty while others still run may leave early, so the loop restarts until nothing is left.
  while (queue.length > 0 && attempts < limits.maxPages && bytes < limits.maxCrawlBytes) {
    await Promise.all(Array.from({ length: HOST_CONCURRENCY }, worker));
  }
  if (attempts >= limits.maxPages || bytes >= limits.maxCrawlBytes) error(`stopped at the cap (${attempts} pages, ${bytes} bytes)`);

  for (const id of previous) {
    if (kept.has(id) || failedIds.has(id)) continue;
    if (await library.remove(id)) report.removed += 1;
  }
  const pageIds = [...previous].filter((id) => failedIds.has(id) && !kept.has(id)).concat([...kept]);
  report.pages = pageIds.length;
  await store.putSource({ ...source, pageIds, lastCrawlAt: new Date(), lastCrawlPages: report.pages, errors: report.errors });
  logger.info('knowledge-crawled', { sourceId: source._id, url: source.url, ...report, errors: report.errors.length });
  return report;
}
