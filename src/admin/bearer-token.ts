/**
 * The operator API's bearer-token check. Both tokens are hashed before the constant-time
 * comparison, so neither the comparison's duration nor a length check reveals anything about
 * the expected token. This module must never log or return either token.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

export type BearerCheck = 'ok' | 'missing' | 'invalid';

const digest = (token: string) => createHash('sha256').update(token, 'utf8').digest();

/** Checks an `Authorization` header value against the expected token. */
export function createBearerCheck(expectedToken: string): (authorization: string | undefined) => BearerCheck {
  const expected = digest(expectedToken);
  return (authorization) => {
    // The scheme is case-insensitive (RFC 9110 §11.1); anything but a Bearer credential counts as none.
    const match = /^Bearer +(\S+) *$/i.exec(authorization ?? '');
    if (!match?.[1]) return 'missing';
    return timingSafeEqual(digest(match[1]), expected) ? 'ok' : 'invalid';
  };
}
