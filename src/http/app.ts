/**
 * The Express application: health and readiness, metrics, and the routers channels mount.
 * Body-parser failures become clear 4xx answers; an infrastructure failure becomes a 503
 * (so Twilio retries, and dedupe makes the retry safe) — never an unexplained 500.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import express, { type ErrorRequestHandler, type RequestHandler, type Router } from 'express';
import type { TrustProxy } from '../config.js';
import { errorField, errorStatus } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';

export interface ReadinessCheck {
  name: string;
  check(): Promise<void>;
  /** The service still serves without it (MongoDB behind the transcript outbox): a failure is `degraded`, still 200. */
  degradable?: boolean;
}

export interface AppOptions {
  trustProxy: TrustProxy;
  routers: readonly Router[];
  readiness: readonly ReadinessCheck[];
  logger: Logger;
  metrics: Metrics;
  /** While shutting down, readiness fails so the load balancer stops routing here. */
  isShuttingDown(): boolean;
  /**
   * /metrics on this (public) port: only when it has no listener of its own and a bearer
   * token is configured; otherwise (and when omitted) the path is a 404 here.
   */
  metricsAccess?: { ownListener: boolean; token: string | undefined };
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Prometheus text, behind `Authorization: Bearer <token>` when a token is given. */
function metricsHandler(metrics: Metrics, token: string | undefined, logger: Logger): RequestHandler {
  const expected = token === undefined ? undefined : digest(`Bearer ${token}`);
  return async (request, response) => {
    if (expected && !timingSafeEqual(digest(request.get('authorization') ?? ''), expected)) {
      logger.warn('request-rejected', { path: request.path, status: 401, reason: 'metrics-token' });
      response.status(401).set('WWW-Authenticate', 'Bearer').json({ error: 'metrics need Authorization: Bearer <METRICS_TOKEN>' });
      return;
    }
    response.type(metrics.contentType).send(await metrics.render());
  };
}

/** The metrics listener's app (METRICS_PORT): /metrics and nothing else. */
export function createMetricsApp(options: { metrics: Metrics; token: string | undefined; logger: Logger }): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.get('/metrics', metricsHandler(options.metrics, options.token, options.logger));
  app.use((_request, response) => {
    response.status(404).json({ error: 'only /metrics is served here' });
  });
  return app;
}

const READINESS_TIMEOUT_MS = 2000;

/** Where an app made by `createApp` keeps its readiness checks (those given, then those added). */
const READINESS_CHECKS = Symbol('readiness-checks');
type WithChecks = express.Express & { [READINESS_CHECKS]?: ReadinessCheck[] };

/** Adds a check to `/readyz` of an app made by `createApp` (the model providers' start-up check, which `main` starts). */
export function addReadinessCheck(app: express.Express, check: ReadinessCheck): void {
  const checks = (app as WithChecks)[READINESS_CHECKS];
  if (!checks) throw new Error('addReadinessCheck: the app was not made by createApp');
  checks.push(check);
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return Promise.race([promise, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms).unref())]);
}

export function createApp(options: AppOptions): express.Express {
  const { logger, metrics } = options;
  const app: WithChecks = express();
  const readiness = [...options.readiness];
  app[READINESS_CHECKS] = readiness;
  app.disable('x-powered-by');
  app.set('trust proxy', options.trustProxy);

  // Every response: browsers take the declared type (a JSON body is never run as a script),
  // and no page of ours may be framed — the widget is a script in the host page, not a frame.
  app.use((_request, response, next) => {
    response.set({ 'X-Content-Type-Options': 'nosniff', 'X-Frame-Options': 'DENY' });
    next();
  });

  // Only origin-form targets (`/path?query`): this is no proxy, and an absolute-form target
  // (`GET http://host/path`) would reach handlers that rebuild URLs from it.
  app.use((request, response, next) => {
    if (request.url.startsWith('/')) {
      next();
      return;
    }
    metrics.increment('http_rejected_total', { status: '400' });
    logger.warn('request-rejected', { method: request.method, reason: 'request-target-not-origin-form' });
    response.status(400).json({ error: 'the request target must be a path (origin-form), not an absolute URL' });
  });

  app.get('/healthz', (_request, response) => {
    response.json({ status: 'ok' });
  });

  // Browsers ask for it on every page of ours (the demo page): nothing, rather than a 404.
  app.get('/favicon.ico', (_request, response) => {
    response.status(204).end();
  });

  app.get('/readyz', async (_request, response) => {
    if (options.isShuttingDown()) {
      response.status(503).json({ status: 'shutting-down' });
      return;
    }
    const results = await Promise.all(
      readiness.map(async ({ name, check, degradable }) => {
        try {
          await withTimeout(check(), READINESS_TIMEOUT_MS);
          return [name, 'ok'] as const;
        } catch (error) {
          logger.warn('readiness-failed', { dependency: name, error });
          return [name, degradable ? 'degraded' : 'unavailable'] as const;
        }
      }),
    );
    const ready = results.every(([, state]) => state !== 'unavailable');
    const status = !ready ? 'unavailable' : results.some(([, state]) => state === 'degraded') ? 'degraded' : 'ready';
    response.status(ready ? 200 : 503).json({ status, checks: Object.fromEntries(results) });
  });

  if (options.metricsAccess && !options.metricsAccess.ownListener && options.metricsAccess.token !== undefined) {
    app.get('/metrics', metricsHandler(metrics, options.metricsAccess.token, logger));
  }

  for (const router of options.routers) app.use(router);

  app.use((request, response) => {
    response.status(404).json({ error: `no route for ${request.method} ${request.path}` });
  });

  const handleError: ErrorRequestHandler = (error: unknown, request, response, _next) => {
    const status = errorStatus(error);
    const type = errorField(error, 'type');
    if (status !== undefined && status >= 400 && status < 500) {
      const message =
        type === 'entity.too.large'
          ? 'request body too large'
          : type === 'entity.parse.failed'
            ? 'request body could not be parsed'
            : type === 'charset.unsupported' || type === 'encoding.unsupported'
              ? 'unsupported body encoding'
              : 'bad request';
      metrics.increment('http_rejected_total', { status: String(status) });
      logger.warn('request-rejected', { path: request.path, status, reason: type ?? 'client-error' });
      response.status(status).json({ error: message });
      return;
    }
    metrics.increment('http_unavailable_total');
    logger.error('request-failed', { path: request.path, error });
    if (!response.headersSent) response.status(503).json({ error: 'temporarily unavailable, retry later' });
  };
  app.use(handleError);
  return app;
}
