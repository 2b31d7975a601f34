/**
 * The reports page's sign-in: the owner types ADMIN_TOKEN into a form once, and gets a session
 * cookie (HttpOnly, SameSite=Strict, Path=/admin/reports, Secure behind HTTPS) worth
 * SESSION_HOURS. The cookie holds no token: `v1.<expiry>.<HMAC-SHA256(expiry)>`, keyed by a
 * digest of the token, so changing ADMIN_TOKEN signs everyone out. Checked in constant time.
 * This module never logs or returns the token.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

const SESSION_COOKIE = 'wa_reports';
const SESSION_HOURS = 12;

export interface ReportSessions {
  /** Whether `token` is ADMIN_TOKEN (constant time). */
  tokenMatches(token: string): boolean;
  /** A Set-Cookie value for a new session. */
  issue(now?: number): string;
  /** A Set-Cookie value that ends the session. */
  clear(): string;
  /** Whether the request's Cookie header carries a live session. */
  valid(cookieHeader: string | undefined, now?: number): boolean;
}

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

export function createReportSessions(adminToken: string, secure: boolean): ReportSessions {
  const expected = digest(adminToken);
  const key = createHmac('sha256', expected).update('wa-assistant reports session').digest();
  const sign = (expiry: string) => createHmac('sha256', key).update(expiry).digest('base64url');
  const attributes = `Path=/admin/reports; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
  return {
    tokenMatches: (token) => timingSafeEqual(digest(token), expected),
    issue(now = Date.now()) {
      const expiry = String(now + SESSION_HOURS * 3_600_000);
      return `${SESSION_COOKIE}=v1.${expiry}.${sign(expiry)}; ${attributes}; Max-Age=${SESSION_HOURS * 3600}`;
    },
    clear: () => `${SESSION_COOKIE}=; ${attributes}; Max-Age=0`,
    valid(cookieHeader, now = Date.now()) {
      const value = (cookieHeader ?? '')
        .split(';')
        .map((part) => part.trim())
        .find((part) => part.startsWith(`${SESSION_COOKIE}=`))
        ?.slice(SESSION_COOKIE.length + 1);
      const match = /^v1\.(\d{1,16})\.([\w-]{43})$/.exec(value ?? '');
      if (!match?.[1] || !match[2]) return false;
      const given = Buffer.from(match[2]);
      const wanted = Buffer.from(sign(match[1]));
      return given.length === wanted.length && timingSafeEqual(given, wanted) && Number(match[1]) > now;
    },
  };
}
