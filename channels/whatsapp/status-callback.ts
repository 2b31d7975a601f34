/**
 * Which stored message a delivery status callback is about, carried by the callback's own URL:
 * each reply part is sent with `StatusCallback=<status route>?part=<its ledger key>`, so the
 * callback names the part it reports on and needs no lookup table from Twilio's SID. Twilio
 * signs the URL it calls, query included, so the key is as trustworthy as the rest of the
 * request. The key travels base64url-encoded: only characters no URL normalisation rewrites
 * (a `:` or `#` may be escaped differently by whoever computes the signature). Callbacks of
 * messages sent without it (before it was added, or by the console's sender-wide callback) say
 * nothing here, and the store looks their SID up as before.
 */
import { z } from 'zod';
import type { InboundMessage } from '../../src/contracts/index.js';
import { formatIssues } from '../../src/errors/issues.js';
import { outboundMessageId } from '../../src/store/transcript-store.js';

/** The status callback URL for part `part` of the reply to `inbound` on `channel` (its ledger key, `out:<channel>:<inbound>#<part>`). */
export function partStatusCallback(statusCallbackUrl: string, channel: string, inbound: InboundMessage, part: number): string {
  const key = Buffer.from(outboundMessageId(channel, inbound.messageId, part)).toString('base64url');
  return `${statusCallbackUrl}${statusCallbackUrl.includes('?') ? '&' : '?'}part=${key}`;
}

/** The status route's query for `channel`: its part's ledger key, base64url-encoded (at most this long). */
function statusQuery(channel: string) {
  return z.object({
    part: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,600}$/, 'expected a base64url ledger key')
      .transform((value) => Buffer.from(value, 'base64url').toString('utf8'))
      .pipe(z.string().regex(new RegExp(`^out:${channel}:.+#\\d+$`), `expected the ledger key of a ${channel} reply part`))
      .optional(),
  });
}

/** The ledger key of `channel`'s reply part a status callback's query names (undefined: none); an error when it is malformed. */
export function partOfCallback(query: unknown, channel: string): { ok: true; part: string | undefined } | { ok: false; error: string } {
  const parsed = statusQuery(channel).safeParse(query ?? {});
  if (!parsed.success) return { ok: false, error: formatIssues(parsed.error.issues, 'query') };
  return { ok: true, part: parsed.data.part };
}
