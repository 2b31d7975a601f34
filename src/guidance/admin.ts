/**
 * The operator API for guidance, under `/admin/guidance`, behind the admin API's bearer token
 * (absent token: the paths do not exist):
 *   GET    /admin/guidance                  the draft, the live version, every version number, each process's live version
 *   POST   /admin/guidance/entries          a draft entry (201)
 *   PUT    /admin/guidance/entries/:id      the draft entry replaced (200)
 *   DELETE /admin/guidance/entries/:id      (204)
 *   POST   /admin/guidance/publish          the draft as the next version (201; 422 with every place over budget)
 *   POST   /admin/guidance/rollback         `{"version": n}`: a new version with version n's entries (201)
 *   GET    /admin/guidance/versions/:n      one published version
 *   POST   /admin/simulations/run           `{"scenarios": [...], "against": "draft"|"published"}`: each scenario's conversation and verdicts
 * Every body is checked by zod; a refusal is a 4xx with a reason, `admin_rejected_total{reason}`
 * and an `admin-request-rejected` line.
 */
import express, { type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import { createAdminHttp } from '../admin/admin-http.js';
import { requireBearer } from '../admin/bearer-token.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { ENTRY_ID, EntryInputSchema } from './model.js';
import { GuidanceRefusal, type GuidanceService } from './service.js';
import { RunBodySchema, type Scenario, type SimulationResult } from './simulation-model.js';

const IdSchema = z.string().regex(ENTRY_ID, 'expected a guidance entry id (g_ and 12 hex digits)');
const VersionSchema = z.coerce.number().int().min(1).max(1_000_000_000);
const RollbackSchema = z.strictObject({ version: VersionSchema });

export function createGuidanceRouter(options: {
  adminToken: string | undefined;
  service: GuidanceService;
  simulations: (scenarios: readonly Scenario[], against: 'draft' | 'published') => Promise<SimulationResult[]>;
  logger: Logger;
  metrics: Metrics;
}): Router {
  const { service } = options;
  const router = express.Router();
  if (!options.adminToken) return router;
  const { refuse, invalid, jsonBody } = createAdminHttp(options.logger, options.metrics);
  router.use(['/admin/guidance', '/admin/simulations'], requireBearer(options.adminToken, refuse));

  /** Runs a route; a `GuidanceRefusal` is its 4xx, anything else goes to the app's error handler. */
  const handle = (run: (request: Request, response: Response) => Promise<void>) => async (request: Request, response: Response) => {
    try {
      await run(request, response);
    } catch (error) {
      if (!(error instanceof GuidanceRefusal)) throw error;
      refuse(request, response, error.status, error.reason, { error: error.message, ...error.details });
    }
  };
  const parsed = <T>(request: Request, response: Response, schema: z.ZodType<T>, value: unknown, what: string): T | undefined => {
    const result = schema.safeParse(value);
    if (!result.success) invalid(request, response, result.error, what);
    return result.success ? result.data : undefined;
  };

  router.get(
    '/admin/guidance',
    handle(async (_request, response) => {
      response.json(await service.overview());
    }),
  );
  router.post(
    '/admin/guidance/entries',
    jsonBody,
    handle(async (request, response) => {
      const input = parsed(request, response, EntryInputSchema, request.body, 'guidance entry');
      if (input) response.status(201).json(await service.create(input));
    }),
  );
  router.put(
    '/admin/guidance/entries/:id',
    jsonBody,
    handle(async (request, response) => {
      const id = parsed(request, response, IdSchema, request.params.id, 'entry id');
      const input = id && parsed(request, response, EntryInputSchema, request.body, 'guidance entry');
      if (id && input) response.json(await service.update(id, input));
    }),
  );
  router.delete(
    '/admin/guidance/entries/:id',
    handle(async (request, response) => {
      const id = parsed(request, response, IdSchema, request.params.id, 'entry id');
      if (!id) return;
      await service.remove(id);
      response.status(204).end();
    }),
  );
  router.post(
    '/admin/guidance/publish',
    handle(async (_request, response) => {
      const version = await service.publish();
      response.status(201).json({ version: version.version, entries: version.entries.length, publishedAt: version.publishedAt });
    }),
  );
  router.post(
    '/admin/guidance/rollback',
    jsonBody,
    handle(async (request, response) => {
      const body = parsed(request, response, RollbackSchema, request.body, 'rollback');
      if (!body) return;
      const version = await service.rollback(body.version);
      response.status(201).json({ version: version.version, restoredFrom: body.version, entries: version.entries.length, publishedAt: version.publishedAt });
    }),
  );
  router.get(
    '/admin/guidance/versions/:version',
    handle(async (request, response) => {
      const number = parsed(request, response, VersionSchema, request.params.version, 'version');
      if (number !== undefined) response.json(await service.version(number));
    }),
  );
  router.post(
    '/admin/simulations/run',
    jsonBody,
    handle(async (request, response) => {
      const body = parsed(request, response, RunBodySchema, request.body, 'simulation run');
      if (!body) return;
      const results = await options.simulations(body.scenarios, body.against);
      response.json({ passed: results.every((result) => result.passed), results });
    }),
  );
  return router;
}
