/**
 * Signed, expiring links to one conversation's transcript, for teammates who take over a
 * conversation. The signature is HMAC-SHA256 over the conversation id and the expiry, so a
 * link opens exactly one conversation until it expires, and changing either breaks it. A media
 * link (relayed to a teammate's WhatsApp) opens exactly one stored file, under a key of its own.
 * The live page's actions also carry a CSRF token: a random nonce and an HMAC (under a key
 * derived from the same secret, for this purpose only) binding it to the link it was issued
 * for, so a token from one link's page is worthless for another.
 * This module must never accept a link or token whose signature it has not checked in constant time.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { ConfigError } from '../errors/index.js';
import { formatIssues } from '../errors/issues.js';

export type TranscriptLinkCheck = 'ok' | 'expired' | 'invalid';

export interface TranscriptLinks {
  /**
   * An absolute link to the conversation's transcript, valid for the configured hours from
   * `issuedAt` (default now). A fixed `issuedAt` gives the same link however often it is built.
   */
  url(conversationId: string, issuedAt?: Date): string;
  /** Checks a link's parts as they arrived (expiry in unix seconds, base64url signature). */
  verify(conversationId: string, expires: string, signature: string): TranscriptLinkCheck;
  /**
   * An absolute link to one stored media of the conversation and nothing else (what a relay to a
   * teammate's WhatsApp carries: Twilio fetches it), valid `ttlMs` from now. Signed under a key
   * of its own: it never opens the transcript, and a transcript link's signature never passes for it.
   */
  mediaUrl(conversationId: string, mediaId: string, ttlMs: number): string;
  /** Checks a media link's parts as they arrived. */
  verifyMedia(conversationId: string, mediaId: string, expires: string, signature: string): TranscriptLinkCheck;
  /** A fresh CSRF token for a page opened by this (verified) link. */
  csrfToken(link: LinkParts): string;
  /** Whether `token` was issued by `csrfToken` for this very link (constant-time). */
  verifyCsrf(link: LinkParts, token: string): boolean;
}

/** A link as it arrived: the conversation, its expiry (unix seconds) and signature. */
export interface LinkParts {
  conversationId: string;
  expires: string;
  signature: string;
}

const TranscriptLinkOptionsSchema = z.object({
  secret: z.string().min(32, 'the transcript link secret must be at least 32 characters'),
  publicBaseUrl: z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' }).transform((value) => value.replace(/\/+$/, '')),
  ttlHours: z
    .number()
    .positive()
    .max(24 * 365),
  now: z.custom<() => number>((value) => typeof value === 'function').optional(),
});
export type TranscriptLinkOptions = z.input<typeof TranscriptLinkOptionsSchema>;

// Canonical unix seconds: no sign, no leading zero, so one expiry has exactly one spelling.
const expiresPattern = /^[1-9]\d{0,11}$/;
const signaturePattern = /^[A-Za-z0-9_-]{43}$/;
// A 16-byte nonce and a SHA-256 HMAC, both base64url.
const csrfPattern = /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;

function equalText(given: string, expected: string): boolean {
  const left = Buffer.from(given, 'ascii');
  const right = Buffer.from(expected, 'ascii');
  return left.length === right.length && timingSafeEqual(left, right);
}

export function createTranscriptLinks(options: TranscriptLinkOptions): TranscriptLinks {
  const parsed = TranscriptLinkOptionsSchema.safeParse(options);
  if (!parsed.success) {
    throw new ConfigError(`invalid transcript link settings: ${formatIssues(parsed.error.issues, '(settings)')}`);
  }
  const { secret, publicBaseUrl, ttlHours } = parsed.data;
  const now = parsed.data.now ?? Date.now;
  // The expiry is digits only, so the last newline separates it from any conversation id.
  const sign = (conversationId: string, expires: string) => createHmac('sha256', secret).update(`${conversationId}\n${expires}`, 'utf8').digest('base64url');
  const csrfKey = createHmac('sha256', secret).update('transcript-page-csrf', 'utf8').digest();
  const mediaKey = createHmac('sha256', secret).update('transcript-media-link', 'utf8').digest();
  // The media id is 24 hex digits: the last two newlines separate it and the expiry from any conversation id.
  const signMedia = (conversationId: string, mediaId: string, expires: string) =>
    createHmac('sha256', mediaKey).update(`${conversationId}\n${mediaId}\n${expires}`, 'utf8').digest('base64url');
  const check = (given: string, expected: string, expires: string): TranscriptLinkCheck => {
    if (!expiresPattern.test(expires) || !signaturePattern.test(given)) return 'invalid';
    // Compared as text: decoding first would accept other spellings of the last character.
    if (!equalText(given, expected)) return 'invalid';
    // Only a genuine link learns that it expired.
    return Number(expires) * 1000 <= now() ? 'expired' : 'ok';
  };
  const csrfMac = (nonce: string, link: LinkParts) =>
    createHmac('sha256', csrfKey).update(`${nonce}\n${link.conversationId}\n${link.expires}\n${link.signature}`, 'utf8').digest('base64url');

  return {
    url(conversationId, issuedAt) {
      const expires = String(Math.floor((issuedAt?.getTime() ?? now()) / 1000 + ttlHours * 3600));
      const signature = sign(conversationId, expires);
      return `${publicBaseUrl}/transcripts/${encodeURIComponent(conversationId)}?expires=${expires}&sig=${signature}`;
    },

    verify(conversationId, expires, signature) {
      return expiresPattern.test(expires) ? check(signature, sign(conversationId, expires), expires) : 'invalid';
    },

    mediaUrl(conversationId, mediaId, ttlMs) {
      const expires = String(Math.floor((now() + ttlMs) / 1000));
      const query = new URLSearchParams({ expires, sig: signMedia(conversationId, mediaId, expires) });
      return `${publicBaseUrl}/transcripts/${encodeURIComponent(conversationId)}/media/${encodeURIComponent(mediaId)}?${query.toString()}`;
    },

    verifyMedia(conversationId, mediaId, expires, signature) {
      return expiresPattern.test(expires) ? check(signature, signMedia(conversationId, mediaId, expires), expires) : 'invalid';
    },

    csrfToken(link) {
      const nonce = randomBytes(16).toString('base64url');
      return `${nonce}.${csrfMac(nonce, link)}`;
    },

    verifyCsrf(link, token) {
      const match = csrfPattern.exec(token);
      if (!match?.[1] || !match[2]) return false;
      return equalText(match[2], csrfMac(match[1], link));
    },
  };
}
