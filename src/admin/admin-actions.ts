/**
 * The admin API's confirmed actions: `GET /admin/actions` lists their records, and
 * `POST /admin/actions/<id>/run` or `/decline` is an operator's decision on a change handed to
 * the team (recorded as `admin:<name>`). A decision answers with the action when it is what was
 * asked (run: done or failed; decline: not run); a change decided before the other way, expired,
 * or being run by another decision right now is a 409 with what it is, never answered as if it
 * had just been decided. A run whose outcome the business system did not give (unreachable,
 * timed out) is a 503: the change stays running, and asking again resolves it with the same
 * idempotency key, so it never runs twice.
 */
import type { Request, RequestHandler, Response, Router } from 'express';
import { z } from 'zod';
import { describeIssues } from '../errors/issues.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { Invalid, Refuse } from './admin-http.js';

/** Confirmed actions' records for operators; implemented by src/actions/action-records.ts. */
export interface ActionReader {
  list(options: { state?: string; tool?: string; limit: number }): Promise<unknown[]>;
  /** A change handed to the team, run or declined by a teammate, once (absent without actions). */
  decide?(actionId: string, decision: { run: boolean; by: string }): Promise<{ outcome: 'unknown' | 'not-for-team' } | { outcome: 'decided'; action: unknown }>;
}

const MAX_PAGE_SIZE = 500;

const ActionListQuerySchema = z.object({
  state: z.enum(['proposed', 'confirmed', 'running', 'done', 'failed', 'cancelled', 'expired']).optional(),
  tool: z.string().min(1).max(128).optional(),
  limit: z.coerce.number().int().min(1).max(MAX_PAGE_SIZE).default(50),
});

const ActionIdSchema = z.uuid('expected an action id');

/** Who decides: their name is recorded on the action (`admin:<name>`). */
const DecisionBodySchema = z.strictObject({ name: z.string().trim().min(1).max(40) });

/** The states a run answers with (it ran: done, or the business system refused it), and those a decline does (it was not run). */
const RUN_ANSWERS: ReadonlySet<string> = new Set(['done', 'failed']);
const DECLINE_ANSWERS: ReadonlySet<string> = new Set(['cancelled']);

const ActionStateSchema = z.looseObject({ state: z.string() });
const actionState = (action: unknown): string | undefined => {
  const parsed = ActionStateSchema.safeParse(action);
  return parsed.success ? parsed.data.state : undefined;
};

export function addActionRoutes(
  router: Router,
  options: {
    actions: ActionReader;
    jsonBody: RequestHandler;
    /** Answers a 4xx, logged and counted (`admin_rejected_total{reason}`). */
    refuse: Refuse;
    invalid: Invalid;
    logger: Logger;
    metrics: Metrics;
  },
): void {
  const { actions, jsonBody, refuse, invalid, logger, metrics } = options;
  router.get('/admin/actions', async (request, response) => {
    const parsed = ActionListQuerySchema.safeParse(request.query);
    if (!parsed.success) {
      invalid(request, response, parsed.error, 'query');
      return;
    }
    response.json({ actions: await actions.list(parsed.data) });
  });
  const { decide } = actions;
  if (!decide) return;

  const act = async (request: Request, response: Response, run: boolean) => {
    const id = ActionIdSchema.safeParse(request.params.id);
    if (!id.success) {
      refuse(request, response, 400, 'invalid_action_id', { error: 'invalid action id', issues: describeIssues(id.error.issues, 'id') });
      return;
    }
    const body = DecisionBodySchema.safeParse(request.body);
    if (!body.success) {
      invalid(request, response, body.error, 'action');
      return;
    }
    const by = `admin:${body.data.name}`;
    let result: Awaited<ReturnType<typeof decide>>;
    try {
      result = await decide(id.data, { run, by });
    } catch (error) {
      // The business system did not answer: the change stays running; asking again resolves it (same idempotency key).
      metrics.increment('admin_rejected_total', { reason: 'outcome_unknown' });
      logger.warn('admin-action-unresolved', { actionId: id.data, run, by, error });
      response.status(503).json({ error: 'the business system did not answer; ask again: the change will not run twice' });
      return;
    }
    if (result.outcome !== 'decided') {
      if (result.outcome === 'unknown') refuse(request, response, 404, 'unknown_action', { error: 'unknown action' });
      else refuse(request, response, 409, 'not_for_team', { error: 'only the customer can confirm this action' });
      return;
    }
    const state = actionState(result.action);
    if (state === undefined || !(run ? RUN_ANSWERS : DECLINE_ANSWERS).has(state)) {
      refuse(request, response, 409, 'already_decided', {
        error: `the action was already decided: it is ${state ?? 'in an unknown state'}`,
        action: result.action,
      });
      return;
    }
    logger.info('admin-action-decided', { actionId: id.data, run, by, state });
    response.json({ action: result.action });
  };
  router.post('/admin/actions/:id/run', jsonBody, (request, response) => act(request, response, true));
  router.post('/admin/actions/:id/decline', jsonBody, (request, response) => act(request, response, false));
}
