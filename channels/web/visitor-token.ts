/**
 * Signed, expiring visitor tokens: bound to a site, a visitor id and a chat. HMAC-SHA256,
 * compared in constant time. An expired token with a valid signature may still renew its
 * session (same site, visitor and chat), never anything else.
 */
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';

const TOKEN_TTL_SECONDS = 24 * 60 * 60;

const ClaimsSchema = z.object({
  s: z.string(),
  v: z.string(),
  c: z.string(),
  e: z.number().int(),
});
export type VisitorClaims = { siteKey: string; visitorId: string; chatId: string; expiresAt: number };

export type TokenCheck =
  | { ok: true; claims: VisitorClaims }
  | { ok: false; reason: 'malformed' | 'bad-signature' | 'expired'; claims?: VisitorClaims };

export function newVisitorId(): string {
  return randomUUID();
}

export function createVisitorTokens(secret: string, now: () => number = Date.now) {
  const sign = (payload: string) => createHmac('sha256', secret).update(payload).digest('base64url');

  return {
    issue(claims: Omit<VisitorClaims, 'expiresAt'>): { token: string; expiresAt: number } {
      const expiresAt = Math.floor(now() / 1000) + TOKEN_TTL_SECONDS;
      const payload = Buffer.from(JSON.stringify({ s: claims.siteKey, v: claims.visitorId, c: claims.chatId, e: expiresAt })).toString('base64url');
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
      const claims = { siteKey: parsed.data.s, visitorId: parsed.data.v, chatId: parsed.data.c, expiresAt: parsed.data.e * 1000 };
      return claims.expiresAt <= now() ? { ok: false, reason: 'expired', claims } : { ok: true, claims };
    },
  };
}
export type VisitorTokens = ReturnType<typeof createVisitorTokens>;
