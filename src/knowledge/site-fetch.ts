/**
 * Fetching a knowledge source's pages politely and safely. The rules are the media fetcher's
 * (src/media/media-fetch.ts): https unless the host is a loopback test server, no credentials in
 * URLs, redirects followed by hand and each hop checked — here against the source's own origin
 * (a crawl never leaves it, so it never reaches a private address unless the source itself is
 * one), one deadline per request, a byte cap on every body. It adds what a crawl needs and the
 * media fetcher does not give: the final URL, the response's headers, conditional requests (a
 * 304 is "unchanged"), robots.txt and sitemaps.
 */
import { XMLParser } from 'fast-xml-parser';
import robotsModule from 'robots-parser';
import { isTimeout } from '../media/media-fetch.js';

interface RobotRules {
  isAllowed(url: string, ua?: string): boolean | undefined;
  getSitemaps(): string[];
}
/** robots-parser is CommonJS (`module.exports = function`): its default import is that function. */
const robotsParser = robotsModule as unknown as (url: string, text: string) => RobotRules;

const USER_AGENT = 'wa-assistant-knowledge';
const MAX_REDIRECTS = 5;
const LOOPBACK_HOSTNAMES = new Set(['127.0.0.1', 'localhost', '[::1]']);

export type FetchOutcome =
  | { kind: 'ok'; url: string; contentType: string; body: Uint8Array; etag?: string; lastModified?: string; robots?: string }
  | { kind: 'not-modified'; url: string }
  | { kind: 'gone'; url: string; status: number }
  | { kind: 'failed'; url: string; reason: string };

/** Whether `url` may be fetched for a source at `origin`: same origin, https (http on loopback only), no credentials. */
export function sameOriginAllowed(url: URL, origin: string): boolean {
  if (url.username || url.password) return false;
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_HOSTNAMES.has(url.hostname))) return false;
  return url.origin === origin;
}

async function readCapped(response: Response, maxBytes: number): Promise<Uint8Array | undefined> {
  const announced = Number(response.headers.get('content-length') ?? Number.NaN);
  if (Number.isFinite(announced) && announced > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    return undefined;
  }
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const part of response.body ?? []) {
    const bytes = part as Uint8Array;
    size += bytes.length;
    if (size > maxBytes) {
      await response.body?.cancel().catch(() => undefined);
      return undefined;
    }
    parts.push(bytes);
  }
  return Buffer.concat(parts);
}

export async function fetchPage(
  rawUrl: string,
  options: { origin: string; maxBytes: number; timeoutMs: number; etag?: string | undefined; lastModified?: string | undefined },
): Promise<FetchOutcome> {
  let url = new URL(rawUrl);
  if (!sameOriginAllowed(url, options.origin)) return { kind: 'failed', url: rawUrl, reason: 'not the source origin' };
  const signal = AbortSignal.timeout(options.timeoutMs);
  const headers: Record<string, string> = { 'user-agent': USER_AGENT, accept: 'text/html,application/xhtml+xml,application/pdf,text/plain;q=0.8,*/*;q=0.1' };
  if (options.etag) headers['if-none-match'] = options.etag;
  if (options.lastModified) headers['if-modified-since'] = options.lastModified;
  try {
    for (let hop = 0; hop <= MAX_REDIRECTS; hop += 1) {
      const response = await fetch(url, { redirect: 'manual', signal, headers });
      if (response.status === 304) {
        await response.body?.cancel().catch(() => undefined);
        return { kind: 'not-modified', url: url.toString() };
      }
      if (response.status >= 300 && response.status < 400) {
        await response.body?.cancel().catch(() => undefined);
        const location = response.headers.get('location');
        if (!location) return { kind: 'failed', url: url.toString(), reason: `redirect ${response.status} without a location` };
        url = new URL(location, url);
        url.hash = '';
        if (!sameOriginAllowed(url, options.origin)) return { kind: 'failed', url: url.toString(), reason: `redirect off the source origin (${url.host})` };
        continue;
      }
      if (response.status === 404 || response.status === 410) {
        await response.body?.cancel().catch(() => undefined);
        return { kind: 'gone', url: url.toString(), status: response.status };
      }
      if (!response.ok) {
        await response.body?.cancel().catch(() => undefined);
        return { kind: 'failed', url: url.toString(), reason: `answered ${response.status}` };
      }
      const body = await readCapped(response, options.maxBytes);
      if (!body) return { kind: 'failed', url: url.toString(), reason: `over the ${options.maxBytes}-byte page cap` };
      const header = (name: string) => response.headers.get(name) ?? undefined;
      return {
        kind: 'ok',
        url: url.toString(),
        contentType: header('content-type') ?? '',
        body,
        ...(header('etag') ? { etag: header('etag') } : {}),
        ...(header('last-modified') ? { lastModified: header('last-modified') } : {}),
        ...(header('x-robots-tag') ? { robots: header('x-robots-tag') } : {}),
      };
    }
    return { kind: 'failed', url: url.toString(), reason: `more than ${MAX_REDIRECTS} redirects` };
  } catch (error) {
    return { kind: 'failed', url: url.toString(), reason: isTimeout(error, signal) ? 'timed out' : networkReason(error) };
  }
}

const NETWORK_REASONS: Record<string, string> = {
  ENOTFOUND: 'host not found (DNS)',
  EAI_AGAIN: 'host not found (DNS lookup failed)',
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
};

/** What a failed request's cause says, in words an operator acts on (never the raw stack). */
function networkReason(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause;
  const code = typeof cause?.code === 'string' ? cause.code : '';
  if (NETWORK_REASONS[code]) return NETWORK_REASONS[code];
  if (/CERT|TLS|SSL/.test(code)) return `TLS certificate refused (${code})`;
  return code ? `network error (${code})` : 'network error';
}

export interface Robots {
  allowed(url: string): boolean;
  sitemaps: string[];
}

/**
 * The origin's robots.txt: missing (404/410) allows everything; one that cannot be read (5xx, a
 * network or DNS failure, a redirect off the origin) is `failed` with the reason — the crawl
 * stops there and changes nothing, rather than reading it as "allow nothing".
 */
export async function fetchRobots(origin: string, options: { timeoutMs: number }): Promise<{ robots: Robots } | { failed: string }> {
  const robotsUrl = `${origin}/robots.txt`;
  const outcome = await fetchPage(robotsUrl, { origin, maxBytes: 512 * 1024, timeoutMs: options.timeoutMs });
  if (outcome.kind === 'gone') return { robots: { allowed: () => true, sitemaps: [] } };
  if (outcome.kind === 'not-modified') return { failed: 'answered 304 to an unconditional request' };
  if (outcome.kind === 'failed') return { failed: outcome.reason };
  const robots = robotsParser(robotsUrl, new TextDecoder().decode(outcome.body));
  return { robots: { allowed: (url) => robots.isAllowed(url, USER_AGENT) !== false, sitemaps: robots.getSitemaps() } };
}

const xml = new XMLParser({ ignoreAttributes: true, isArray: (name) => name === 'url' || name === 'sitemap' });

interface SitemapXml {
  urlset?: { url?: { loc?: string }[] };
  sitemapindex?: { sitemap?: { loc?: string }[] };
}

/** Page URLs from a sitemap (following a sitemap index one level), same-origin and robots-allowed only. */
export async function readSitemap(
  sitemapUrl: string,
  options: { origin: string; timeoutMs: number; maxUrls: number; robots: Robots },
  depth = 0,
): Promise<string[]> {
  if (!options.robots.allowed(sitemapUrl)) return [];
  const outcome = await fetchPage(sitemapUrl, { origin: options.origin, maxBytes: 10 * 1024 * 1024, timeoutMs: options.timeoutMs });
  if (outcome.kind !== 'ok') return [];
  let parsed: SitemapXml;
  try {
    parsed = xml.parse(new TextDecoder().decode(outcome.body)) as SitemapXml;
  } catch {
    return [];
  }
  const urls: string[] = [];
  for (const entry of parsed.urlset?.url ?? []) {
    if (urls.length >= options.maxUrls) break;
    if (typeof entry.loc !== 'string') continue;
    try {
      const url = new URL(entry.loc.trim());
      if (sameOriginAllowed(url, options.origin) && options.robots.allowed(url.toString())) urls.push(url.toString());
    } catch {
      // Not a URL: skipped.
    }
  }
  if (depth === 0) {
    for (const entry of parsed.sitemapindex?.sitemap ?? []) {
      if (urls.length >= options.maxUrls || typeof entry.loc !== 'string') continue;
      urls.push(...(await readSitemap(entry.loc.trim(), { ...options, maxUrls: options.maxUrls - urls.length }, 1)));
    }
  }
  return urls;
}
