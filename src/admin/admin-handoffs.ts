/**
 * The admin API's hand-offs: `GET /admin/handoffs` lists them (by status, newest first), and
 * `POST /admin/handoffs/:id/{take,hand-back,close}` acts on one, recorded with the operator's
 * name (`admin:<name>`); a hand-off someone else holds, or in the wrong status, is a 409.
 */
import type { Request, Response, Router } from 'express';
import { z } from 'zod';
import { describeIssues } from '../errors/issues.js';
import { HANDOFF_STATUSES, type HandoffStatus } from '../handoff/handoff-store.js';
import type { TakeoverService } from '../takeover/takeover.js';
import type { Logger } from '../logger.js';
import { pageSize, type AdminHttp } from './admin-http.js';

/** Reads hand-offs for operators; implemented by the hand-off store. */
export interface HandoffReader {
  list(options: { status?: HandoffStatus; limit: number }): Promise<unknown[]>;
}

const HandoffListQuerySchema = z.object({ status: z.enum(HANDOFF_STATUSES).optional(), limit: pageSize(50) });

const HandoffIdSchema = z.string().regex(/^ho_[0-9a-f]{20}$/, 'expected a hand-off id (ho_ followed by 20 hex digits)');
/** Who is acting: their name is recorded on the hand-off (`admin:<name>`). */
const HandoffActionSchema = z.strictObject({ name: z.string().trim().min(1).max(40) });

export function addHandoffRoutes(
  router: Router,
  options: { handoffs: HandoffReader; takeover: Pick<TakeoverService, 'takeOver' | 'handBack' | 'close'> | undefined; http: AdminHttp; logger: Logger },
): void {
  const { handoffs, takeover, http, logger } = options;
  const { refuse, invalid, jsonBody } = http;

  router.get('/admin/handoffs', async (request, response) => {
    const parsed = HandoffListQuerySchema.safeParse(request.query);
    if (!parsed.success) {
      invalid(request, response, parsed.error, 'query');
      return;
    }
    const { status, limit } = parsed.data;
    response.json({ handoffs: await handoffs.list({ ...(status ? { status } : {}), limit }) });
  });

  if (!takeover) return;
  const act = async (request: Request, response: Response, action: 'take' | 'hand-back' | 'close') => {
    const id = HandoffIdSchema.safeParse(request.params.id);
    if (!id.success) {
      refuse(request, response, 400, 'invalid_handoff_id', { error: 'invalid hand-off id', issues: describeIssues(id.error.issues, 'id') });
      return;
    }
    const body = HandoffActionSchema.safeParse(request.body);
    if (!body.success) {
      invalid(request, response, body.error, 'action');
      return;
    }
    const by = { id: `admin:${body.data.name}`, name: body.data.name, via: 'admin' as const };
    const handoffId = id.data;
    const result =
      action === 'take'
        ? await takeover.takeOver({ handoffId, by })
        : action === 'hand-back'
          ? await takeover.handBack({ handoffId, by, reason: 'admin' })
          : await takeover.close({ handoffId, by, reason: 'admin' });
    if (result.outcome === 'not_found') {
      refuse(request, response, 404, 'unknown_handoff', { error: 'unknown hand-off' });
      return;
    }
    if (result.outcome === 'held' || result.outcome === 'not_holder') {
      refuse(request, response, 409, 'held', { error: `${result.holder.name} is handling this hand-off`, holder: result.holder });
      return;
    }
    if (result.outcome === 'ended' || result.outcome === 'not_taken' || result.outcome === 'already_ended') {
      refuse(request, response, 409, 'wrong_status', { error: `the hand-off is ${result.status.replace('_', ' ')}`, status: result.status });
      return;
    }
    logger.info('admin-handoff-action', { handoffId, action, by: by.id, outcome: result.outcome });
    response.json({ outcome: result.outcome, handoff: result.handoff });
  };
  router.post('/admin/handoffs/:id/take', jsonBody, (request, response) => act(request, response, 'take'));
  router.post('/admin/handoffs/:id/hand-back', jsonBody, (request, response) => act(request, response, 'hand-back'));
  router.post('/admin/handoffs/:id/close', jsonBody, (request, response) => act(request, response, 'close'));
}
