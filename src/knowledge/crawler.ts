/**
 * One crawl of one source: robots.txt first (a disallowed page is never fetched, whatever names
 * it), the sitemap's pages and the start URL, then links breadth-first up to the depth cap; at
 * most 2 requests at a time to the host; a page is known by its final URL after redirects, or
 * its canonical link when that is on the same origin; `noindex` pages are not indexed and
 * `nofollow` pages' links not followed; re-crawls send the stored validators (a 304 keeps the
 * page and follows its stored links) and rewrite a page only when its text hash changed.
 *
 * A crawl never destroys on doubt. When robots.txt or the start page cannot be read, the crawl
 * fails: its errors say why, and every page of the last crawl stays. A page that fails to load
 * (or to read) is kept and its stored links are followed as if it had answered. A page of an
 * earlier crawl is removed only when the site answered 404/410 for it, or when a crawl that ran
 * to its end (not stopped at a cap) found nothing linking to it any more. A crawl whose source
 * is removed meanwhile stops at the next page and takes back what it wrote.
 */
import type { Logger } from '../logger.js';
import { followableLinks, inScope, MAX_STORED_LINKS, pageOwnerId, readPage } from './crawl-page.js';
import type { KnowledgeLibrary } from './library.js';
import type { OwnerRecord, SourceRecord } from './model.js';
import { fetchPage, fetchRobots, readSitemap, sameOriginAllowed, type Robots } from './site-fetch.js';
import type { KnowledgeStore } from './store.js';

export interface CrawlLimits {
  maxPages: number;
  maxDepth: number;
  maxPageBytes: number;
  maxCrawlBytes: number;
  timeoutMs: number;
}

export interface CrawlReport {
  /** `ok`; `errors` (ran to its end, some pages failed); `failed` (nothing removed, the last pages kept). */
  outcome: 'ok' | 'errors' | 'failed';
  pages: number;
  fetched: number;
  unchanged: number;
  removed: number;
  errors: string[];
}

export interface CrawlDependencies {
  store: KnowledgeStore;
  library: KnowledgeLibrary;
  limits: CrawlLimits;
  logger: Logger;
  /** True once the source was removed while this crawl ran (checked before each page and at the end). */
  stopped?: () => Promise<boolean>;
}

const HOST_CONCURRENCY = 2;
const MAX_ERRORS = 20;

interface CrawlState {
  source: SourceRecord;
  origin: string;
  startKey: string;
  robots: Robots;
  report: CrawlReport;
  previous: Set<string>;
  kept: Set<string>;
  /** Pages that failed to load or read: kept as they were. */
  failed: Set<string>;
  /** Pages the site answered 404/410 for. */
  gone: Set<string>;
  seen: Set<string>;
  queue: { url: string; depth: number }[];
  bytes: number;
  attempts: number;
  startFailure?: string | undefined;
}

const addError = (state: CrawlState, message: string) => {
  if (state.report.errors.length < MAX_ERRORS) state.report.errors.push(message);
};

function enqueue(state: CrawlState, raw: string, depth: number, limits: CrawlLimits): void {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return;
  }
  url.hash = '';
  const key = url.toString();
  if (state.seen.has(key) || depth > limits.maxDepth || !sameOriginAllowed(url, state.origin) || !inScope(url, state.source)) return;
  state.seen.add(key);
  if (!state.robots.allowed(key)) {
    if (key === state.startKey) addError(state, `${key}: the start page is disallowed by robots.txt`);
    return;
  }
  state.queue.push({ url: key, depth });
}

/** A page that failed to load or read: kept as it was, and its stored links followed as if it had answered. */
function keepOnDoubt(state: CrawlState, item: { url: string; depth: number }, known: OwnerRecord | undefined, reason: string, limits: CrawlLimits) {
  addError(state, `${item.url}: ${reason}`);
  if (item.url === state.startKey) state.startFailure ??= reason;
  state.failed.add(pageOwnerId(item.url));
  for (const link of known?.links ?? []) enqueue(state, link, item.depth + 1, limits);
}

async function visit(state: CrawlState, item: { url: string; depth: number }, dependencies: CrawlDependencies): Promise<void> {
  const { store, library, limits } = dependencies;
  const known = await store.getOwner(pageOwnerId(item.url));
  const outcome = await fetchPage(item.url, {
    origin: state.origin,
    maxBytes: limits.maxPageBytes,
    timeoutMs: limits.timeoutMs,
    etag: known?.etag,
    lastModified: known?.lastModified,
  });
  if (outcome.kind === 'not-modified') {
    state.kept.add(pageOwnerId(outcome.url));
    state.report.unchanged += 1;
    for (const link of known?.links ?? []) enqueue(state, link, item.depth + 1, limits);
    return;
  }
  if (outcome.kind === 'gone') {
    state.gone.add(pageOwnerId(item.url));
    if (item.url === state.startKey) state.startFailure ??= `answered ${outcome.status}`;
    return;
  }
  if (outcome.kind === 'failed') return keepOnDoubt(state, item, known, outcome.reason, limits);
  state.report.fetched += 1;
  state.bytes += outcome.body.length;
  // The final URL after redirects is the page's name; robots apply to it too.
  if (outcome.url !== item.url && !state.robots.allowed(outcome.url)) return;
  state.seen.add(outcome.url);
  let page: Awaited<ReturnType<typeof readPage>>;
  try {
    page = await readPage(outcome);
  } catch (readError) {
    return keepOnDoubt(state, item, known, `unreadable (${readError instanceof Error ? readError.message : 'error'})`, limits);
  }
  if (!page) return;
  const links = page.nofollow ? [] : followableLinks(page.links, state.origin, state.source);
  for (const link of links) enqueue(state, link, item.depth + 1, limits);
  if (page.noindex || !page.text.trim()) return;
  // A duplicate names its canonical page: that page is crawled (and indexed) in its place.
  if (page.canonical && page.canonical !== outcome.url && sameOriginAllowed(new URL(page.canonical), state.origin)) {
    enqueue(state, page.canonical, item.depth, limits);
    return;
  }
  const ownerId = pageOwnerId(outcome.url);
  if (state.kept.has(ownerId) || (await dependencies.stopped?.())) return;
  state.kept.add(ownerId);
  // A page with more links than are stored keeps no validators: it is never answered 304 for links it would lose.
  const complete = links.length <= MAX_STORED_LINKS;
  const result = await library.put({
    ownerId,
    kind: 'page',
    title: page.title || outcome.url,
    url: outcome.url,
    text: page.text,
    sites: state.source.sites ?? [],
    language: state.source.language,
    extra: {
      sourceId: state.source._id,
      etag: complete ? outcome.etag : undefined,
      lastModified: complete ? outcome.lastModified : undefined,
      bytes: outcome.body.length,
      contentType: outcome.contentType,
      links: links.slice(0, MAX_STORED_LINKS),
    },
  });
  if (result.unchanged) state.report.unchanged += 1;
}

/** Fetches the queue's pages, HOST_CONCURRENCY at a time, up to the caps; false when it stopped at a cap or was stopped. */
async function crawlPages(state: CrawlState, dependencies: CrawlDependencies): Promise<boolean> {
  const { limits } = dependencies;
  const capped = () => state.attempts >= limits.maxPages || state.bytes >= limits.maxCrawlBytes;
  let stopped = false;
  const worker = async () => {
    for (;;) {
      if (stopped || capped()) return;
      const item = state.queue.shift();
      if (!item) return;
      if (await dependencies.stopped?.()) {
        stopped = true;
        return;
      }
      state.attempts += 1;
      await visit(state, item, dependencies).catch((visitError: unknown) => {
        addError(state, `${item.url}: ${visitError instanceof Error ? visitError.message : 'failed'}`);
        state.failed.add(pageOwnerId(item.url));
      });
    }
  };
  // A worker that finds the queue empty while others still run may leave early, so the loop
  // restarts until nothing is left.
  while (!stopped && state.queue.length > 0 && !capped()) {
    await Promise.all(Array.from({ length: HOST_CONCURRENCY }, worker));
  }
  if (capped()) addError(state, `stopped at the cap (${state.attempts} pages, ${state.bytes} bytes)`);
  return !stopped && !capped();
}

export async function crawlSource(source: SourceRecord, dependencies: CrawlDependencies): Promise<CrawlReport> {
  const { store, library, limits, logger } = dependencies;
  const start = new URL(source.url);
  const origin = start.origin;
  start.hash = '';
  const report: CrawlReport = { outcome: 'ok', pages: 0, fetched: 0, unchanged: 0, removed: 0, errors: [] };
  const previous = new Set(source.pageIds);
  const finish = async (pageIds: string[]) => {
    report.pages = pageIds.length;
    if (report.outcome === 'ok' && report.errors.length > 0) report.outcome = 'errors';
    await store.putSource({
      ...source,
      pageIds,
      lastCrawlAt: new Date(),
      lastCrawlPages: report.pages,
      lastCrawlOutcome: report.outcome,
      errors: report.errors,
    });
    logger.info('knowledge-crawled', { sourceId: source._id, origin, ...report, errors: report.errors.length, firstError: report.errors[0] });
    return report;
  };
  const fail = (reason: string, pageIds: string[]) => {
    report.outcome = 'failed';
    report.errors = [reason, ...report.errors].slice(0, MAX_ERRORS);
    return finish(pageIds);
  };
  if (!sameOriginAllowed(start, origin))
    return fail('the source URL is not allowed (https, or http on loopback only; no user name or password)', [...previous]);
  const robots = await fetchRobots(origin, { timeoutMs: limits.timeoutMs });
  if ('failed' in robots) return fail(`robots.txt could not be read (${robots.failed}): the last crawl's pages are kept`, [...previous]);
  const state: CrawlState = {
    source,
    origin,
    startKey: start.toString(),
    robots: robots.robots,
    report,
    previous,
    kept: new Set(),
    failed: new Set(),
    gone: new Set(),
    seen: new Set(),
    queue: [],
    bytes: 0,
    attempts: 0,
  };
  enqueue(state, state.startKey, 0, limits);
  const sitemaps = source.sitemap ? [source.sitemap] : robots.robots.sitemaps.length > 0 ? robots.robots.sitemaps : [`${origin}/sitemap.xml`];
  for (const sitemap of sitemaps) {
    const urls = await readSitemap(sitemap, { origin, timeoutMs: limits.timeoutMs, maxUrls: limits.maxPages * 2, robots: robots.robots });
    for (const url of urls) enqueue(state, url, 1, limits);
  }
  const complete = await crawlPages(state, dependencies);

  if (await dependencies.stopped?.()) {
    // The source was removed meanwhile: what this crawl wrote goes too, and the source is not written back.
    for (const id of new Set([...previous, ...state.kept])) await library.remove(id);
    logger.info('knowledge-crawl-stopped', { sourceId: source._id, origin, reason: 'source removed' });
    return { ...report, outcome: 'failed', pages: 0, errors: ['the source was removed during the crawl'] };
  }
  const written = [...new Set([...previous, ...state.kept])];
  if (state.startFailure) return fail(`the start page could not be read (${state.startFailure}): the last crawl's pages are kept`, written);
  for (const id of previous) {
    if (state.kept.has(id) || state.failed.has(id)) continue;
    // Unlinked pages go only after a crawl that ran to its end; a page the site said is gone always goes.
    if (!complete && !state.gone.has(id)) continue;
    if (await library.remove(id)) report.removed += 1;
  }
  const pageIds = [...previous].filter((id) => !state.kept.has(id) && (state.failed.has(id) || (!complete && !state.gone.has(id)))).concat([...state.kept]);
  return finish(pageIds);
}
