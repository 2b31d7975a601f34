/**
 * The Express application: health and readiness, metrics, and the routers channels mount.
 * Body-parser failures become clear 4xx answers; an infrastructure failure becomes a 503
 * (so Twilio retries, and dedupe makes the retry safe) — never an unexplained 500.
 */
import express, { type ErrorRequestHandler, type Router } from 'express';
import type { TrustProxy } from '../config.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';

export interface ReadinessCheck {
  name: string;
  check(): Promise<void>;
}

export interface AppOptions {
  trustProxy: TrustProxy;
  routers: readonly Router[];
  readiness: readonly ReadinessCheck[];
  logger: Logger;
  metrics: Metrics;
  /** While shutting down, readiness fails so the load balancer stops routing here. */
  isShuttingDown(): boolean;
}

const READINESS_TIMEOUT_MS = 2000;

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms).unref()),
  ]);
}

export function createApp(options: AppOptions): express.Express {
  const { logger, metrics } = options;
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', options.trustProxy);

  app.get('/healthz', (_request, response) => {
    response.json({ status: 'ok' });
  });

  app.get('/readyz', async (_request, response) => {
    if (options.isShuttingDown()) {
      response.status(503).json({ status: 'shutting-down' });
      return;
    }
    const results = await Promise.all(
      options.readiness.map(async ({ name, check }) => {
        try {
          await withTimeout(check(), READINESS_TIMEOUT_MS);
          return [name, 'ok'] as const;
        } catch (error) {
          logger.warn('readiness-failed', { dependency: name, error });
          return [name, 'unavailable'] as const;
        }
      }),
    );
    const ready = results.every(([, state]) => state === 'ok');
    response.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'unavailable', checks: Object.fromEntries(results) });
  });

  app.get('/metrics', (_request, response) => {
    response.type('text/plain; version=0.0.4').send(metrics.render());
  });

  for (const router of options.routers) app.use(router);

  app.use((request, response) => {
    response.status(404).json({ error: `no route for ${request.method} ${request.path}` });
  });

  const handleError: ErrorRequestHandler = (error: unknown, request, response, _next) => {
    const status = (error as { status?: unknown }).status;
    const type = (error as { type?: unknown }).type;
    if (typeof status === 'number' && status >= 400 && status < 500) {
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
