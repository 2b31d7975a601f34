/**
 * The queue dashboard (Bull Board) under `/admin/queues`: the turns and hand-off-notice queues,
 * their jobs, waits and failures, for an operator. Behind the same `Authorization: Bearer
 * <ADMIN_TOKEN>` check as the admin API, and absent (404) without a token. Read-only: removing
 * or re-running a turn by hand would go around the inbox and the send ledger. The page loads
 * only its own bundled assets — the web font it links by default is taken out, and a
 * Content-Security-Policy refuses anything not served from here.
 */
import type { Queue } from 'bullmq';
import express, { type RequestHandler, type Router } from 'express';
import { loadOnce } from '../load-once.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { createBearerCheck } from './bearer-token.js';

const QUEUE_DASHBOARD_PATH = '/admin/queues';

const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'self'",
  "form-action 'self'",
].join('; ');

/** Any `<link>` to a host other than this one (the UI's default web font). */
const OUTSIDE_LINK = /<link\b[^>]*\bhref="https?:\/\/[^"]*"[^>]*>\s*/gi;

export interface QueueDashboardOptions {
  /** Undefined disables the dashboard. */
  adminToken: string | undefined;
  queues: readonly Queue[];
  logger: Logger;
  metrics: Metrics;
}

export function createQueueDashboard(options: QueueDashboardOptions): Router {
  const { logger, metrics } = options;
  const router = express.Router();
  if (!options.adminToken) return router;
  const checkBearer = createBearerCheck(options.adminToken);

  // Bull Board is loaded with the first signed-in request: a process nobody opens it in never loads it.
  const loadBoard = loadOnce(async () => {
    const [{ createBullBoard }, { BullMQAdapter }, { ExpressAdapter }] = await Promise.all([
      import('@bull-board/api'),
      import('@bull-board/api/bullMQAdapter'),
      import('@bull-board/express'),
    ]);
    const serverAdapter = new ExpressAdapter().setBasePath(QUEUE_DASHBOARD_PATH);
    createBullBoard({
      queues: options.queues.map((queue) => new BullMQAdapter(queue, { readOnlyMode: true })),
      serverAdapter,
      options: { uiConfig: { boardTitle: 'Queues' } },
    });
    return serverAdapter.getRouter() as RequestHandler;
  });

  router.use(
    QUEUE_DASHBOARD_PATH,
    (request, response, next) => {
      response.set({ 'Cache-Control': 'no-store', 'Content-Security-Policy': CONTENT_SECURITY_POLICY });
      const check = checkBearer(request.get('authorization'));
      if (check !== 'ok') {
        metrics.increment('admin_rejected_total', { reason: `token_${check}` });
        logger.warn('admin-request-rejected', { method: request.method, path: request.baseUrl + request.path, status: 401, reason: `token_${check}` });
        response.set('WWW-Authenticate', check === 'missing' ? 'Bearer' : 'Bearer error="invalid_token"');
        response.status(401).json({ error: check === 'missing' ? 'missing bearer token' : 'invalid token' });
        return;
      }
      // The entry page is rendered from the UI's template: drop its outside links before sending.
      const render = response.render.bind(response);
      response.render = (view: string, locals?: object) => {
        render(view, locals ?? {}, (error: Error | null, html: string | undefined) => {
          if (error) next(error);
          else response.type('html').send((html ?? '').replace(OUTSIDE_LINK, ''));
        });
      };
      next();
    },
    // Express passes a rejection (the board failing to load) to the error handler.
    async (request, response, next) => (await loadBoard())(request, response, next),
  );
  return router;
}
