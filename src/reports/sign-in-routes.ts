/**
 * The reports page's sign-in and sign-out routes: `GET /sign-in` (the form), `POST /sign-in`
 * (attempts limited per address before the token is compared: a 429 with Retry-After and a
 * `reports-sign-in-limited` line past the limit; a wrong token is a 401 with its line; the right
 * one a session cookie and a redirect to the range asked for), `POST /sign-out` (the session
 * deleted on the server, the cookie cleared). Redis failing is a 503, never a 500.
 */
import express, { type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { RedisClient } from '../redis.js';
import { renderSignIn } from './page.js';
import type { ReportSessions } from './session.js';
import { checkSignIn } from './sign-in-limit.js';

const SignInSchema = z.object({
  token: z.string().min(1).max(512),
  from: z.string().max(10).optional(),
  to: z.string().max(10).optional(),
  channel: z.string().max(64).optional(),
  preset: z.string().max(20).optional(),
  group: z.string().max(10).optional(),
});

interface SignInDeps {
  sessions: ReportSessions;
  redis: RedisClient;
  logger: Logger;
  metrics: Metrics;
  reject(request: Request, response: Response, status: number, reason: string, html: boolean): void;
  unavailable(request: Request, response: Response, error: unknown, html: boolean): void;
}

export function mountSignIn(router: Router, { sessions, redis, logger, metrics, reject, unavailable }: SignInDeps): void {
  router.get('/sign-in', (request, response) => {
    const query = Object.fromEntries(
      ['from', 'to', 'channel', 'preset', 'group'].flatMap((field) => (typeof request.query[field] === 'string' ? [[field, request.query[field]]] : [])),
    );
    response.type('html').send(renderSignIn(request.baseUrl, query));
  });

  router.post('/sign-in', express.urlencoded({ extended: false, limit: '4kb' }), async (request, response) => {
    const parsed = SignInSchema.safeParse(request.body);
    if (!parsed.success) {
      reject(request, response, 400, 'the form needs the admin token', true);
      return;
    }
    const { token, ...range } = parsed.data;
    const address = request.ip ?? 'unknown';
    let cookie: string;
    try {
      // Counted before the token is compared: a burst of guesses gets no more comparisons than a slow one.
      const attempt = await checkSignIn(redis, address);
      if (!attempt.allowed) {
        metrics.increment('reports_rejected_total', { status: '429' });
        logger.warn('reports-sign-in-limited', { address, retryAfterSeconds: attempt.retryAfterSeconds });
        const minutes = Math.ceil(attempt.retryAfterSeconds / 60);
        response
          .status(429)
          .set('Retry-After', String(attempt.retryAfterSeconds))
          .type('html')
          .send(
            renderSignIn(request.baseUrl, range, `Too many sign-in attempts from your address. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`),
          );
        return;
      }
      if (sessions.tokenMatches(token)) {
        await attempt.clear();
        cookie = await sessions.issue();
      } else cookie = '';
    } catch (error) {
      unavailable(request, response, error, true);
      return;
    }
    if (!cookie) {
      metrics.increment('reports_rejected_total', { status: '401' });
      logger.warn('reports-request-rejected', { method: request.method, path: request.baseUrl + request.path, status: 401, reason: 'wrong token', address });
      response
        .status(401)
        .type('html')
        .send(renderSignIn(request.baseUrl, range, 'That token is not right.'));
      return;
    }
    logger.info('reports-signed-in', {});
    const query = new URLSearchParams(Object.entries(range).filter((entry): entry is [string, string] => Boolean(entry[1]))).toString();
    response.set('Set-Cookie', cookie).redirect(303, `${request.baseUrl}${query ? `?${query}` : ''}`);
  });

  router.post('/sign-out', async (request, response) => {
    try {
      // The session ends on the server: the cookie opens nothing after, wherever a copy of it is.
      response.set('Set-Cookie', await sessions.end(request.get('cookie')));
    } catch (error) {
      unavailable(request, response, error, true);
      return;
    }
    logger.info('reports-signed-out', {});
    response.redirect(303, `${request.baseUrl}/sign-in`);
  });
}
