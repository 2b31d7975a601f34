/**
 * Fetching a customer's media from the channel that holds it (Twilio), safely: the URL's host
 * must be one the channel names (anything else is refused before a request: no SSRF through a
 * forged `MediaUrl`), https unless it is a loopback test server the deployment listed, HTTP basic
 * auth sent to that host only, redirects followed by hand (Twilio answers with one to its CDN)
 * to allowed hosts only and never with the credentials, one deadline for the whole download.
 * The body is handed back as a stream: the caller stores it with its size cap.
 */
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { MediaRejectedError } from './content-check.js';

/** Where one channel's media may come from, and how to authenticate there. */
export interface MediaSource {
  /** Hosts a media URL may name: `host[:port]`, `*.example.com` (any subdomain), or `loopback`. */
  hosts: readonly string[];
  /** Hosts a redirect may lead to (same forms). */
  redirectHosts: readonly string[];
  /** HTTP basic auth, sent only to the URL's own host (never after a redirect to another). */
  credentials?: { username: string; password: string };
}

const MAX_REDIRECTS = 5;
const LOOPBACK_HOSTNAMES = new Set(['127.0.0.1', 'localhost', '[::1]']);

function isLoopback(url: URL): boolean {
  return LOOPBACK_HOSTNAMES.has(url.hostname);
}

function hostAllowed(url: URL, allowed: readonly string[]): boolean {
  const loopback = isLoopback(url);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) return false;
  if (url.username || url.password) return false;
  return allowed.some((entry) => {
    if (entry === 'loopback') return loopback;
    if (entry.startsWith('*.')) return url.port === '' && url.hostname.endsWith(entry.slice(1));
    return url.host === entry;
  });
}

export interface FetchedMedia {
  body: Readable;
  /** The length the server announced, if any. */
  contentLength: number | undefined;
}

function failed(reason: 'download-failed' | 'download-timeout', message: string, cause?: unknown): MediaRejectedError {
  return new MediaRejectedError(reason, message, cause === undefined ? undefined : { cause });
}

/** Whether an error is the deadline (or a cancelled download) rather than a refusal. */
export function isTimeout(error: unknown, signal: AbortSignal): boolean {
  return signal.aborted || (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError'));
}

/**
 * Starts downloading `rawUrl`; resolves once the final response's headers arrived. `signal`
 * bounds the whole download (the body stream errors when it fires). Throws
 * `MediaRejectedError`: `download-failed` (a refused host, a bad status, too many redirects, a
 * network error) or `download-timeout`; `too-large` when the announced length is over `maxBytes`.
 */
export async function fetchMedia(rawUrl: string, source: MediaSource, options: { maxBytes: number; signal: AbortSignal }): Promise<FetchedMedia> {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch (error) {
    throw failed('download-failed', 'media URL is not a URL', error);
  }
  if (!hostAllowed(url, source.hosts)) throw failed('download-failed', `media host ${url.host} is not allowed`);
  const origin = url.origin;
  const authorization = source.credentials
    ? `Basic ${Buffer.from(`${source.credentials.username}:${source.credentials.password}`).toString('base64')}`
    : undefined;
  for (let hop = 0; hop <= MAX_REDIRECTS; hop += 1) {
    let response: Response;
    try {
      response = await fetch(url, {
        redirect: 'manual',
        signal: options.signal,
        headers: authorization && url.origin === origin ? { authorization } : {},
      });
    } catch (error) {
      if (isTimeout(error, options.signal)) throw failed('download-timeout', 'media download timed out', error);
      throw failed('download-failed', 'media download failed', error);
    }
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel().catch(() => undefined);
      const location = response.headers.get('location');
      if (!location) throw failed('download-failed', `media redirect ${response.status} without a location`);
      url = new URL(location, url);
      if (!hostAllowed(url, source.redirectHosts)) throw failed('download-failed', `media redirect to ${url.host} is not allowed`);
      continue;
    }
    if (!response.ok || !response.body) {
      await response.body?.cancel().catch(() => undefined);
      throw failed('download-failed', `media download answered ${response.status}`);
    }
    const announced = Number(response.headers.get('content-length') ?? Number.NaN);
    const contentLength = Number.isFinite(announced) ? announced : undefined;
    if (contentLength !== undefined && contentLength > options.maxBytes) {
      await response.body.cancel().catch(() => undefined);
      throw new MediaRejectedError('too-large', `media of ${contentLength} bytes is over the ${options.maxBytes}-byte cap`);
    }
    return { body: Readable.fromWeb(response.body as WebReadableStream<Uint8Array>), contentLength };
  }
  throw failed('download-failed', `media download redirected more than ${MAX_REDIRECTS} times`);
}
