/**
 * The reports page's sign-in: the owner types ADMIN_TOKEN into a form once, and gets a session
 * cookie (HttpOnly, SameSite=Strict, Path=/admin/reports, Secure behind HTTPS) worth
 * SESSION_HOURS. The cookie holds no token, only a random session id; the session lives in Redis
 * (`asst:reports-session:<SHA-256 of the id>`, expiring with the cookie) holding a fingerprint of
 * the token it was opened with. Signing out deletes it, so the cookie opens nothing after; a
 * changed ADMIN_TOKEN matches no fingerprint, so every session ends with it. Sign-in attempts
 * are limited per address (`sign-in-limit.ts`). This module never logs or returns the token.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { KEY_PREFIX, type RedisClient } from '../redis.js';

const SESSION_COOKIE = 'wa_reports';
const SESSION_HOURS = 12;

export interface ReportSessions {
  /** Whether `token` is ADMIN_TOKEN (constant time). */
  tokenMatches(token: string): boolean;
  /** A Set-Cookie value for a new session (stored in Redis first). */
  issue(): Promise<string>;
  /** Ends the request's session on the server; the Set-Cookie value that clears the cookie. */
  end(cookieHeader: string | undefined): Promise<string>;
  /** Whether the request's Cookie header carries a live session of the current token. */
  valid(cookieHeader: string | undefined): Promise<boolean>;
}

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/** The session id a Cookie header carries, if it is well formed. */
function sessionIdOf(cookieHeader: string | undefined): string | undefined {
  const value = (cookieHeader ?? '')
    .split(';')
    .map((part) => part.trim())
    .find((part) => part.startsWith(`${SESSION_COOKIE}=`))
    ?.slice(SESSION_COOKIE.length + 1);
  return /^v2\.([\w-]{43})$/.exec(value ?? '')?.[1];
}

export function createReportSessions(adminToken: string, secure: boolean, redis: RedisClient): ReportSessions {
  const expected = digest(adminToken);
  // Which token a session was opened with, without keeping the token (or its plain digest) in Redis.
  const fingerprint = createHmac('sha256', expected).update('wa-assistant reports session').digest('base64url');
  const attributes = `Path=/admin/reports; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
  const keyOf = (id: string) => `${KEY_PREFIX}:reports-session:${digest(id).toString('base64url')}`;
  return {
    tokenMatches: (token) => timingSafeEqual(digest(token), expected),
    async issue() {
      const id = randomBytes(32).toString('base64url');
      await redis.set(keyOf(id), fingerprint, 'EX', SESSION_HOURS * 3600);
      return `${SESSION_COOKIE}=v2.${id}; ${attributes}; Max-Age=${SESSION_HOURS * 3600}`;
    },
    async end(cookieHeader) {
      const id = sessionIdOf(cookieHeader);
      if (id) await redis.del(keyOf(id));
      return `${SESSION_COOKIE}=; ${attributes}; Max-Age=0`;
    },
    async valid(cookieHeader) {
      const id = sessionIdOf(cookieHeader);
      if (!id) return false;
      const stored = await redis.get(keyOf(id));
      if (!stored) return false;
      const given = Buffer.from(stored);
      const wanted = Buffer.from(fingerprint);
      return given.length === wanted.length && timingSafeEqual(given, wanted);
    },
  };
}
