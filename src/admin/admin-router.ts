/**
 * The operator API under `/admin`: contacts (one, a page, a bulk import: `admin-contacts.ts`), the
 * hand-off list and its actions (take over, hand back, close — recorded with the operator's name:
 * `admin-handoffs.ts`), confirmed actions (`admin-actions.ts`) and model usage (`admin-usage.ts`).
 * A contact is addressed by its WhatsApp number or, without one, by `user:<external id>`;
 * its external id and email are how a website-verified visitor is matched to it, so no two
 * contacts may declare the same one (409). Every request needs `Authorization: Bearer <ADMIN_TOKEN>`; without a configured token
 * the API does not exist (404, like any unknown path). Bodies are parsed only after the token
 * is checked, and every refusal is a 4xx with a reason plus an `admin-request-rejected` line.
 * This router must never echo or log the token, and never store part of an invalid import.
 */
import express, { type Router } from 'express';
import type { ContactStore } from '../contacts/contact-store.js';
import { ConfigError } from '../errors/index.js';
import type { TakeoverService } from '../takeover/takeover.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { addActionRoutes, type ActionReader } from './admin-actions.js';
import { addContactRoutes } from './admin-contacts.js';
import { addHandoffRoutes, type HandoffReader } from './admin-handoffs.js';
import { createAdminHttp } from './admin-http.js';
import { addUsageRoutes, type UsageReader } from './admin-usage.js';
import { requireBearer } from './bearer-token.js';

export type { HandoffReader } from './admin-handoffs.js';
export type { UsageReader } from './admin-usage.js';

export interface AdminRouterOptions {
  /** Undefined disables the admin API. */
  adminToken: string | undefined;
  contacts: ContactStore;
  handoffs: HandoffReader;
  /** `POST /admin/handoffs/:id/{take,hand-back,close}`: acts on a hand-off, recorded with who. */
  takeover?: Pick<TakeoverService, 'takeOver' | 'handBack' | 'close'>;
  /** `GET /admin/actions`: confirmed actions, newest first; absent, the path is unknown. */
  actions?: ActionReader | undefined;
  /** `GET /admin/usage`; absent, the path is unknown. */
  usage?: UsageReader;
  logger: Logger;
  metrics: Metrics;
}

const MIN_ADMIN_TOKEN_LENGTH = 24;

export function createAdminRouter(options: AdminRouterOptions): Router {
  const { contacts, handoffs, logger, metrics } = options;
  const router = express.Router();
  const http = createAdminHttp(logger, metrics);
  const { logRejection, refuse, invalid, jsonBody } = http;

  if (!options.adminToken) {
    logger.info('admin-api-disabled', { reason: 'ADMIN_TOKEN is not set' });
    // Falls through to the app's 404, exactly like a path that never existed.
    router.use('/admin', (request, _response, next) => {
      logRejection(request, 404, 'disabled');
      next();
    });
    return router;
  }
  if (options.adminToken.length < MIN_ADMIN_TOKEN_LENGTH) {
    throw new ConfigError(`the admin token must be at least ${MIN_ADMIN_TOKEN_LENGTH} characters`);
  }

  router.use('/admin', requireBearer(options.adminToken, refuse));

  addContactRoutes(router, { contacts, http, logger, metrics });
  addHandoffRoutes(router, { handoffs, takeover: options.takeover, http, logger });
  if (options.actions) addActionRoutes(router, { actions: options.actions, jsonBody, refuse, invalid, logger, metrics });
  if (options.usage) addUsageRoutes(router, { usage: options.usage, http });
  return router;
}
