/**
 * Signed, expiring links to one conversation's transcript, for teammates who take over a
 * conversation. The signature is HMAC-SHA256 over the conversation id and the expiry, so a
 * link opens exactly one conversation until it expires, and changing either breaks it.
 * This module must never accept a link whose signature it has not checked in constant time.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
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

export function createTranscriptLinks(options: TranscriptLinkOptions): TranscriptLinks {
  const parsed = TranscriptLinkOptionsSchema.safeParse(options);
  if (!parsed.success) {
    throw new ConfigError(`invalid transcript link settings: ${formatIssues(parsed.error.issues, '(settings)')}`);
  }
  const { secret, publicBaseUrl, ttlHours } = parsed.data;
  const now = parsed.data.now ?? Date.now;
  // The expiry is digits only, so the last newline separates it from any conversation id.
  const sign = (conversationId: string, expires: string) => createHmac('sha256', secret).update(`${conversationId}\n${expires}`, 'utf8').digest('base64url');

  return {
    url(conversationId, issuedAt) {
      const expires = String(Math.floor((issuedAt?.getTime() ?? now()) / 1000 + ttlHours * 3600));
      const signature = sign(conversationId, expires);
      return `${publicBaseUrl}/transcripts/${encodeURIComponent(conversationId)}?expires=${expires}&sig=${signature}`;
    },

    verify(conversationId, expires, signature) {
      if (!expiresPattern.test(expires) || !signaturePattern.test(signature)) return 'invalid';
      // Compared as text: decoding first would accept other spellings of the last character.
      const given = Buffer.from(signature, 'ascii');
      const expected = Buffer.from(sign(conversationId, expires), 'ascii');
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'invalid';
      // Only a genuine link learns that it expired.
      return Number(expires) * 1000 <= now() ? 'expired' : 'ok';
    },
  };
}
