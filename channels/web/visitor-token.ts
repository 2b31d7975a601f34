/**
 * Signed, expiring visitor tokens: bound to a site, a visitor id, a chat and — for a visitor
 * the website verified — that user. HMAC-SHA256, compared in constant time. Only the service
 * writes the claims, so the verified user in a token is as trustworthy as the site's signature
 * it was issued on. An expired token with a valid signature may still renew its session (same
 * site, visitor, chat and user) for RENEWAL_WINDOW_SECONDS after it was issued, never later and
 * never anything else.
 */
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { VerifiedUser } from './visitor-identity.js';

const TOKEN_TTL_SECONDS = 24 * 60 * 60;
/** How long after issue an expired token may still renew its session. */
const RENEWAL_WINDOW_SECONDS = 30 * 24 * 60 * 60;

const ClaimsSchema = z.object({
  s: z.string(),
  v: z.string(),
  c: z.string(),
  e: z.number().int(),
  /** Issued at (s). Tokens from before it existed have none and can no longer renew once expired. */
  i: z.number().int().optional(),
  u: z.object({ i: z.string(), e: z.string().optional(), n: z.string().optional() }).optional(),
});
export type VisitorClaims = { siteKey: string; visitorId: string; chatId: string; expiresAt: number; issuedAt?: number; user?: VerifiedUser };

export type TokenCheck = { ok: true; claims: VisitorClaims } | { ok: false; reason: 'malformed' | 'bad-signature' | 'expired'; claims?: VisitorClaims };

export function newVisitorId(): string {
  return randomUUID();
}

export function createVisitorTokens(secret: string, now: () => number = Date.now) {
  const sign = (payload: string) => createHmac('sha256', secret).update(payload).digest('base64url');

  return {
    issue(claims: Omit<VisitorClaims, 'expiresAt' | 'issuedAt'>): { token: string; expiresAt: number } {
      const issuedAt = Math.floor(now() / 1000);
      const expiresAt = issuedAt + TOKEN_TTL_SECONDS;
      const { user } = claims;
      const body = {
        s: claims.siteKey,
        v: claims.visitorId,
        c: claims.chatId,
        e: expiresAt,
        i: issuedAt,
        ...(user ? { u: { i: user.id, ...(user.email ? { e: user.email } : {}), ...(user.name ? { n: user.name } : {}) } } : {}),
      };
      const payload = Buffer.from(JSON.stringify(body)).toString('base64url');
      return { token: `v1.${payload}.${sign(payload)}`, expiresAt: expiresAt * 1000 };
    },

    verify(token: string | undefined): TokenCheck {
      const [version, payload, signature] = (token ?? '').split('.');
      if (version !== 'v1' || !payload || !signature) return { ok: false, reason: 'malformed' };
      const expected = Buffer.from(sign(payload));
      const given = Buffer.from(signature);
      if (expected.length !== given.length || !timingSafeEqual(expected, given)) return { ok: false, reason: 'bad-signature' };
      let parsed;
      try {
        parsed = ClaimsSchema.safeParse(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')));
      } catch {
        return { ok: false, reason: 'malformed' };
      }
      if (!parsed.success) return { ok: false, reason: 'malformed' };
      const { s, v, c, e, i, u } = parsed.data;
      const claims: VisitorClaims = {
        siteKey: s,
        visitorId: v,
        chatId: c,
        expiresAt: e * 1000,
        ...(i !== undefined ? { issuedAt: i * 1000 } : {}),
        ...(u ? { user: { id: u.i, ...(u.e ? { email: u.e } : {}), ...(u.n ? { name: u.n } : {}) } } : {}),
      };
      return claims.expiresAt <= now() ? { ok: false, reason: 'expired', claims } : { ok: true, claims };
    },

    /**
     * a link to one uploaded file for the widget's history (`mediaId` and expiry, ms),
     * signed apart from tokens (a token's payload never holds a newline).
     */
    signMedia(mediaId: string, expires: number): string {
      return sign(`media\n${mediaId}\n${expires}`);
    },

    /** True for a media link `signMedia` made that has not expired. */
    verifyMedia(mediaId: string, expires: number, signature: string): boolean {
      const expected = Buffer.from(sign(`media\n${mediaId}\n${expires}`));
      const given = Buffer.from(signature);
      return expires > now() && expected.length === given.length && timingSafeEqual(expected, given);
    },

    /** True while a genuinely signed (possibly expired) token may renew its session. */
    renewable(claims: VisitorClaims): boolean {
      return claims.expiresAt > now() || (claims.issuedAt !== undefined && now() - claims.issuedAt < RENEWAL_WINDOW_SECONDS * 1000);
    },
  };
}
export type VisitorTokens = ReturnType<typeof createVisitorTokens>;
