/**
 * The operator API's bearer-token check. Both tokens are hashed before the constant-time
 * comparison, so neither the comparison's duration nor a length check reveals anything about
 * the expected token. This module must never log or return either token.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';

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

/** How a router refuses a request (its metric, log line and JSON body). */
export type BearerRefusal = (request: Request, response: Response, status: number, reason: string, body: { error: string }) => void;

/** A middleware that lets a request with the expected bearer token through and refuses the rest (401, `WWW-Authenticate`); nothing is cached. */
export function requireBearer(expectedToken: string, refuse: BearerRefusal): RequestHandler {
  const checkBearer = createBearerCheck(expectedToken);
  return (request, response, next) => {
    response.set('Cache-Control', 'no-store');
    const check = checkBearer(request.get('authorization'));
    if (check === 'ok') {
      next();
      return;
    }
    response.set('WWW-Authenticate', check === 'missing' ? 'Bearer' : 'Bearer error="invalid_token"');
    refuse(request, response, 401, `token_${check}`, { error: check === 'missing' ? 'missing bearer token' : 'invalid token' });
  };
}
