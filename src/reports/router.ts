/**
 * `/admin/reports` (mounted there): the owner's page (`GET /`, signed in through `GET|POST
 * /sign-in`, out through `POST /sign-out`), `GET /summary` (the same figures as JSON) and `GET
 * /csv/<table>.csv`. The page takes only the session cookie; the JSON and CSV take it or the
 * admin API's bearer token. Every answer is `no-store` with a strict CSP; a bad query is a 400
 * with its reason and a `reports-request-rejected` line; MongoDB or Redis failing is a 503.
 * Without ADMIN_TOKEN the paths do not exist (404).
 */
import express, { type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import { createBearerCheck } from '../admin/bearer-token.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { renderError, renderReport, renderSignIn, REPORTS_CSP } from './page.js';
import type { RollupStore } from './rollup-store.js';
import { createReportSessions } from './session.js';
import type { CsatAnswer, SatisfactionSource } from './satisfaction.js';
import { parseQuery, readSummary, withSatisfaction, type ModelPrices, type ReportSummary } from './summary.js';
import { answersTable, reportTables, TABLE_NAMES, toCsv, type Table, type TableName } from './tables.js';

export interface ReportsRouterOptions {
  adminToken: string | undefined;
  /** Behind HTTPS: the session cookie is `Secure`. */
  secureCookies: boolean;
  /** The channels a report can pick (read on each request). */
  channels: () => readonly string[];
  prices: ModelPrices | undefined;
  store: RollupStore;
  csat?: SatisfactionSource | undefined;
  logger: Logger;
  metrics: Metrics;
  /** The UTC day (tests pin it). */
  today?: () => string;
}

const SignInSchema = z.object({
  token: z.string().min(1).max(512),
  from: z.string().max(10).optional(),
  to: z.string().max(10).optional(),
  channel: z.string().max(64).optional(),
});

export function createReportsRouter(options: ReportsRouterOptions): Router {
  const { logger, metrics, store } = options;
  const router = express.Router();
  const today = options.today ?? (() => new Date().toISOString().slice(0, 10));
  if (!options.adminToken) return router;
  const sessions = createReportSessions(options.adminToken, options.secureCookies);
  const checkBearer = createBearerCheck(options.adminToken);

  const reject = (request: Request, response: Response, status: number, reason: string, html: boolean) => {
    metrics.increment('reports_rejected_total', { status: String(status) });
    logger.warn('reports-request-rejected', { method: request.method, path: request.baseUrl + request.path, status, reason });
    response.status(status);
    if (html) response.type('html').send(renderError(request.baseUrl, reason));
    else response.json({ error: reason });
  };

  router.use((_request, response, next) => {
    response.set({
      'Cache-Control': 'no-store',
      'Content-Security-Policy': REPORTS_CSP,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
    });
    next();
  });

  const signedIn = (request: Request) => sessions.valid(request.get('cookie'));
  const apiAllowed = (request: Request) => signedIn(request) || checkBearer(request.get('authorization')) === 'ok';

  /** The query's summary (and the satisfaction answers), or a refusal already answered. */
  const summaryFor = async (request: Request, response: Response, html: boolean): Promise<{ summary: ReportSummary; answers: CsatAnswer[] } | undefined> => {
    const channels = options.channels();
    const parsed = parseQuery(request.query, channels, today());
    if ('error' in parsed) {
      reject(request, response, 400, parsed.error, html);
      return undefined;
    }
    try {
      await store.flush().catch((error: unknown) => logger.warn('reports-flush-failed', { error }));
      const [summary, satisfaction] = await Promise.all([
        readSummary(store, parsed.query, channels, today(), options.prices),
        options.csat ? options.csat.read(parsed.query) : null,
      ]);
      return { summary: withSatisfaction(summary, satisfaction), answers: satisfaction?.answers ?? [] };
    } catch (error) {
      logger.error('reports-read-failed', { error });
      response.status(503);
      if (html) response.type('html').send(renderError(request.baseUrl, 'The figures cannot be read right now (storage unavailable). Try again shortly.'));
      else response.json({ error: 'storage unavailable' });
      return undefined;
    }
  };

  router.get('/sign-in', (request, response) => {
    const query = Object.fromEntries(
      ['from', 'to', 'channel'].flatMap((field) => (typeof request.query[field] === 'string' ? [[field, request.query[field]]] : [])),
    );
    response.type('html').send(renderSignIn(request.baseUrl, query));
  });

  router.post('/sign-in', express.urlencoded({ extended: false, limit: '4kb' }), (request, response) => {
    const parsed = SignInSchema.safeParse(request.body);
    if (!parsed.success) {
      reject(request, response, 400, 'the form needs the admin token', true);
      return;
    }
    const { token, ...range } = parsed.data;
    if (!sessions.tokenMatches(token)) {
      metrics.increment('reports_rejected_total', { status: '401' });
      logger.warn('reports-request-rejected', { method: request.method, path: request.baseUrl + request.path, status: 401, reason: 'wrong token' });
      response
        .status(401)
        .type('html')
        .send(renderSignIn(request.baseUrl, range, 'That token is not right.'));
      return;
    }
    logger.info('reports-signed-in', {});
    const query = new URLSearchParams(Object.entries(range).filter((entry): entry is [string, string] => Boolean(entry[1]))).toString();
    response.set('Set-Cookie', sessions.issue()).redirect(303, `${request.baseUrl}${query ? `?${query}` : ''}`);
  });

  router.post('/sign-out', (request, response) => {
    response.set('Set-Cookie', sessions.clear()).redirect(303, `${request.baseUrl}/sign-in`);
  });

  router.get('/', async (request, response) => {
    if (!signedIn(request)) {
      const query = new URLSearchParams(Object.entries(request.query).filter((entry): entry is [string, string] => typeof entry[1] === 'string')).toString();
      response.redirect(303, `${request.baseUrl}/sign-in${query ? `?${query}` : ''}`);
      return;
    }
    const found = await summaryFor(request, response, true);
    if (found) response.type('html').send(renderReport(request.baseUrl, found.summary, options.channels()));
  });

  router.get('/summary', async (request, response) => {
    if (!apiAllowed(request)) {
      reject(request, response, 401, 'sign in, or send Authorization: Bearer <ADMIN_TOKEN>', false);
      return;
    }
    const found = await summaryFor(request, response, false);
    if (found) response.json(found.summary);
  });

  router.get('/csv/:table', async (request, response) => {
    const name = request.params.table.replace(/\.csv$/, '');
    if (!apiAllowed(request)) {
      reject(request, response, 401, 'sign in, or send Authorization: Bearer <ADMIN_TOKEN>', false);
      return;
    }
    if (!([...TABLE_NAMES, 'answers'] as readonly string[]).includes(name)) {
      reject(request, response, 404, `no table ${name}; tables: ${[...TABLE_NAMES, 'answers'].join(', ')}`, false);
      return;
    }
    const found = await summaryFor(request, response, false);
    if (!found) return;
    const { summary } = found;
    const table: Table = name === 'answers' ? answersTable(found.answers) : reportTables(summary)[name as TableName];
    response
      .type('text/csv; charset=utf-8')
      .set('Content-Disposition', `attachment; filename="${name}-${summary.channel}-${summary.from}-${summary.to}.csv"`)
      .send(toCsv(table));
  });

  return router;
}
