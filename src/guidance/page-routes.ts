/**
 * The guidance page's routes under `/admin/reports/guidance`, signed in like the reports (their
 * session cookie, whose path covers this one; signed out: to the reports' sign-in). Forms post
 * back here (SameSite=Strict cookie, `form-action 'self'`) and are answered with a redirect to the
 * page saying what was done, or the page with the refusal and a 4xx. Without ADMIN_TOKEN the
 * paths do not exist.
 */
import express, { type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import { formatIssues } from '../errors/issues.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { RedisClient } from '../redis.js';
import { createReportSessions } from '../reports/session.js';
import { ENTRY_ID, EntryInputSchema } from './model.js';
import { GUIDANCE_PAGE_CSP, renderGuidance } from './page.js';
import { GuidanceRefusal, type GuidanceService } from './service.js';
import type { SimulationResult } from './simulation-model.js';

const PAGE_PATH = '/admin/reports/guidance';
/** What a form's redirect may say was done. */
const DONE = /^(Added g_[0-9a-f]{12} to the draft|Removed g_[0-9a-f]{12} from the draft|Published version \d{1,10}( with version \d{1,10}'s entries)?)\.$/;
const list = (value: unknown) =>
  typeof value === 'string' && value.trim()
    ? value
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean)
    : undefined;

const FormSchema = z.object({
  category: z.string(),
  text: z.string(),
  roles: z.string().optional(),
  channels: z.string().optional(),
  sites: z.string().optional(),
  team: z.string().optional(),
});

export function createGuidancePage(options: {
  adminToken: string | undefined;
  secureCookies: boolean;
  redis: RedisClient;
  service: GuidanceService;
  logger: Logger;
  metrics: Metrics;
  /** Runs every saved scenario (each one's latest form) against the draft. */
  runSaved: () => Promise<SimulationResult[]>;
}): Router {
  const { service, logger, metrics } = options;
  const router = express.Router();
  if (!options.adminToken) return router;
  const sessions = createReportSessions(options.adminToken, options.secureCookies, options.redis);
  const page = express.Router();
  router.use(PAGE_PATH, page);
  const form = express.urlencoded({ extended: false, limit: '16kb' });

  page.use(async (request, response, next) => {
    response.set({
      'Cache-Control': 'no-store',
      'Content-Security-Policy': GUIDANCE_PAGE_CSP,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
    });
    try {
      if (await sessions.valid(request.get('cookie'))) return next();
    } catch (error) {
      logger.error('guidance-page-session-failed', { error });
      response.status(503).type('text').send('Signing in is not possible right now (storage unavailable). Try again shortly.');
      return;
    }
    response.redirect(303, '/admin/reports/sign-in');
  });

  const show = async (response: Response, status: number, message?: Parameters<typeof renderGuidance>[2], results?: SimulationResult[]) =>
    response
      .status(status)
      .type('html')
      .send(renderGuidance(PAGE_PATH, await service.overview(), message, results));

  /** Runs a form's action: a redirect saying what was done, or the page with the refusal. */
  const act = (run: (request: Request) => Promise<string>) => async (request: Request, response: Response) => {
    try {
      const done = await run(request);
      response.redirect(303, `${PAGE_PATH}?done=${encodeURIComponent(done)}`);
    } catch (error) {
      if (!(error instanceof GuidanceRefusal)) throw error;
      metrics.increment('admin_rejected_total', { reason: error.reason });
      logger.warn('guidance-page-rejected', { path: request.path, status: error.status, reason: error.reason });
      const problems = (error.details.problems as { where: object; budget: string; entries: string[] }[] | undefined) ?? [];
      const details = problems.map((problem) => `${problem.budget} budget at ${JSON.stringify(problem.where)}: ${problem.entries.join(', ')} would not fit`);
      await show(response, error.status, { error: error.message, details });
    }
  };

  page.get('/', async (request, response) => {
    // Only the page's own confirmations are shown: a crafted link cannot put words on the page.
    const done = typeof request.query.done === 'string' && DONE.test(request.query.done) ? request.query.done : undefined;
    await show(response, 200, done ? { done } : undefined);
  });

  page.post(
    '/entries',
    form,
    act(async (request) => {
      const body = FormSchema.safeParse(request.body);
      const roles = list(body.data?.roles);
      const channels = list(body.data?.channels);
      const sites = list(body.data?.sites);
      const parsed = EntryInputSchema.safeParse({
        category: body.data?.category,
        text: body.data?.text,
        scope: { ...(roles ? { roles } : {}), ...(channels ? { channels } : {}), ...(sites ? { sites } : {}) },
        ...(body.data?.team ? { team: body.data.team } : {}),
      });
      if (!parsed.success) throw new GuidanceRefusal(400, 'invalid_request', `invalid entry: ${formatIssues(parsed.error.issues, 'entry')}`);
      const entry = await service.create(parsed.data);
      return `Added ${entry.id} to the draft.`;
    }),
  );

  page.post(
    '/entries/:id/delete',
    act(async (request) => {
      const id = String(request.params.id);
      if (!ENTRY_ID.test(id)) throw new GuidanceRefusal(400, 'invalid_request', 'not a guidance entry id');
      await service.remove(id);
      return `Removed ${id} from the draft.`;
    }),
  );

  page.post(
    '/publish',
    act(async () => `Published version ${(await service.publish()).version}.`),
  );

  page.post(
    '/rollback',
    form,
    act(async (request) => {
      const version = z.coerce
        .number()
        .int()
        .min(1)
        .safeParse((request.body as { version?: unknown } | undefined)?.version);
      if (!version.success) throw new GuidanceRefusal(400, 'invalid_request', 'not a version number');
      return `Published version ${(await service.rollback(version.data)).version} with version ${version.data}'s entries.`;
    }),
  );
  // The results are this response's page (a run is not repeatable by a link); a model that fails is a 502 with the reason.
  page.post('/simulations', async (_request, response) => {
    let results: SimulationResult[];
    try {
      results = await options.runSaved();
    } catch (error) {
      logger.warn('guidance-page-simulations-failed', { error });
      await show(response, 502, { error: 'The simulations could not run: a model call failed. Try again shortly.' });
      return;
    }
    logger.info('guidance-page-simulations-run', { scenarios: results.length, failed: results.filter((result) => !result.passed).length });
    await show(response, 200, undefined, results);
  });
  return router;
}
