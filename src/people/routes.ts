/**
 * `/admin/people`: `GET /admin/people/{id}/export` (the person's data as one JSON document),
 * `POST /admin/people/{id}/erase` (everything removed; the erasure's record answers) and
 * `GET /admin/people/erasures` (the records: who asked, when, how many items per store). Behind
 * ADMIN_TOKEN like the rest of `/admin` (without it the paths do not exist). A malformed id is a
 * 400 naming the forms accepted. The id is never logged: a refusal logs its reason, an erasure
 * its own id.
 */
import express, { type Request, type Response, type Router } from 'express';
import { requireBearer } from '../admin/bearer-token.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { PeopleService } from './people.js';
import { PERSON_ID_FORMS } from './person-id.js';

/** Who asked, in an erasure's record: the admin token has no name of its own. */
const REQUESTED_BY = 'admin';

export function createPeopleRouter(options: { adminToken: string | undefined; people: PeopleService; logger: Logger; metrics: Metrics }): Router {
  const { people, logger, metrics } = options;
  const router = express.Router();
  if (!options.adminToken) return router;
  const refuse = (_request: Request, response: Response, status: number, reason: string, body: { error: string }) => {
    metrics.increment('admin_rejected_total', { reason });
    logger.warn('people-request-rejected', { status, reason });
    response.status(status).json(body);
  };
  router.use('/admin/people', requireBearer(options.adminToken, refuse));
  const badId = (request: Request, response: Response) => refuse(request, response, 400, 'person_id', { error: `invalid person id: ${PERSON_ID_FORMS}` });

  router.get('/admin/people/erasures', async (_request, response) => {
    response.json({ erasures: await people.list() });
  });
  router.get('/admin/people/:id/export', async (request, response) => {
    const document = await people.export(String(request.params.id));
    if (!document) {
      badId(request, response);
      return;
    }
    logger.info('person-exported', { conversations: document.conversations.length });
    response.json(document);
  });
  router.post('/admin/people/:id/erase', async (request, response) => {
    const record = await people.erase(String(request.params.id), REQUESTED_BY);
    if (!record) {
      badId(request, response);
      return;
    }
    response.json(record);
  });
  return router;
}
