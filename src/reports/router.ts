/**
 * `/admin/reports` (mounted there): the owner's page (`GET /`, signed in through `GET|POST
 * /sign-in`, out through `POST /sign-out`), `GET /summary` (the same figures as JSON) and `GET
 * /csv/<table>.csv`. The page takes only the session cookie; the JSON and CSV take it or the
 * admin API's bearer token. Every answer is `no-store` with a strict CSP; a bad query is a 400
 * with its reason and a `reports-request-rejected` line; MongoDB or Redis failing is a 503.
 * Without ADMIN_TOKEN the paths do not exist (404).
 */
import express, { type Request, type Response, type Router } from 'express';
import { createBearerCheck } from '../admin/bearer-token.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { RedisClient } from '../redis.js';
import { renderError, renderReport, REPORTS_CSP } from './page.js';
import type { RollupStore } from './rollup-store.js';
import { createReportSessions } from './session.js';
import { mountSignIn } from './sign-in-routes.js';
import type { CsatAnswer, SatisfactionSource } from './satisfaction.js';
import type { WaitingSource } from './waiting-handoffs.js';
import { previousRange } from './ranges.js';
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
  /** Sessions and sign-in attempts. */
  redis: RedisClient;
  csat?: SatisfactionSource | undefined;
  /** Hand-offs waiting now (MongoDB's hand-offs and messages). */
  waiting?: WaitingSource | undefined;
  logger: Logger;
  metrics: Metrics;
  /** Today in the reports' time zone (tests pin it). */
  today?: () => string;
  /** The IANA time zone whose days the reports count (REPORTS_TIME_ZONE); UTC by default. */
  timeZone?: string;
}

export function createReportsRouter(options: ReportsRouterOptions): Router {
  const { logger, metrics, store } = options;
  const router = express.Router();
  const today = options.today ?? (() => new Date().toISOString().slice(0, 10));
  const zone = options.timeZone ?? 'UTC';
  if (!options.adminToken) return router;
  const sessions = createReportSessions(options.adminToken, options.secureCookies, options.redis);
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
  const apiAllowed = async (request: Request) => checkBearer(request.get('authorization')) === 'ok' || (await signedIn(request));
  /** Redis (sessions, attempts) failing: a 503 saying so, never a 500. */
  const unavailable = (request: Request, response: Response, error: unknown, html: boolean) => {
    logger.error('reports-session-failed', { error });
    response.status(503);
    if (html) response.type('html').send(renderError(request.baseUrl, 'Signing in is not possible right now (storage unavailable). Try again shortly.'));
    else response.json({ error: 'storage unavailable' });
  };

  /** The query's summary (and the satisfaction answers), or a refusal already answered. */
  const summaryFor = async (
    request: Request,
    response: Response,
    html: boolean,
  ): Promise<{ summary: ReportSummary; answers: CsatAnswer[]; sites: string[]; roles: string[] } | undefined> => {
    const channels = options.channels();
    try {
      // The sites a report can pick: those counted so far (one SMEMBERS).
      const [sites, roles] = await Promise.all([store.sites(), store.roles()]);
      const parsed = parseQuery(request.query, channels, today(), sites, roles);
      if ('error' in parsed) {
        reject(request, response, 400, parsed.error, html);
        return undefined;
      }
      await store.flush().catch((error: unknown) => logger.warn('reports-flush-failed', { error }));
      const before = { ...parsed.query, ...previousRange(parsed.query.from, parsed.query.to) };
      const [summary, satisfaction, previous, waitingNow] = await Promise.all([
        readSummary(store, parsed.query, channels, today(), options.prices),
        options.csat ? options.csat.read({ ...parsed.query, zone }) : null,
        options.csat ? options.csat.read({ ...before, zone }) : null,
        options.waiting ? options.waiting.read(parsed.query) : undefined,
      ]);
      const complete = withSatisfaction(summary, satisfaction, previous);
      return { summary: waitingNow ? { ...complete, waitingNow } : complete, answers: satisfaction?.answers ?? [], sites, roles };
    } catch (error) {
      logger.error('reports-read-failed', { error });
      response.status(503);
      if (html) response.type('html').send(renderError(request.baseUrl, 'The figures cannot be read right now (storage unavailable). Try again shortly.'));
      else response.json({ error: 'storage unavailable' });
      return undefined;
    }
  };

  mountSignIn(router, { sessions, redis: options.redis, logger, metrics, reject, unavailable });

  /** Whether the request may see the figures (false: already answered); storage failing is a 503. */
  const allowed = async (request: Request, response: Response, html: boolean, check: (request: Request) => Promise<boolean>) => {
    try {
      return await check(request);
    } catch (error) {
      unavailable(request, response, error, html);
      return undefined;
    }
  };

  router.get('/', async (request, response) => {
    const ok = await allowed(request, response, true, signedIn);
    if (ok === undefined) return;
    if (!ok) {
      const query = new URLSearchParams(Object.entries(request.query).filter((entry): entry is [string, string] => typeof entry[1] === 'string')).toString();
      response.redirect(303, `${request.baseUrl}/sign-in${query ? `?${query}` : ''}`);
      return;
    }
    const found = await summaryFor(request, response, true);
    if (found)
      response.type('html').send(renderReport(request.baseUrl, found.summary, options.channels(), today(), { sites: found.sites, roles: found.roles }, zone));
  });

  router.get('/summary', async (request, response) => {
    const ok = await allowed(request, response, false, apiAllowed);
    if (ok === undefined) return;
    if (!ok) {
      reject(request, response, 401, 'sign in, or send Authorization: Bearer <ADMIN_TOKEN>', false);
      return;
    }
    const found = await summaryFor(request, response, false);
    if (found) response.json(found.summary);
  });

  router.get('/csv/:table', async (request, response) => {
    const name = request.params.table.replace(/\.csv$/, '');
    const ok = await allowed(request, response, false, apiAllowed);
    if (ok === undefined) return;
    if (!ok) {
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
      .set(
        'Content-Disposition',
        `attachment; filename="${name}-${summary.channel}${summary.site === 'all' ? '' : `-${summary.site}`}${summary.role === 'all' ? '' : `-${summary.role}`}-${summary.from}-${summary.to}.csv"`,
      )
      .send(toCsv(table));
  });

  return router;
}
