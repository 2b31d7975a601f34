/**
 * The widget's HTTP surface, one group a file: the script, its catalogues and the demo page
 * (`route-static.ts`), visitor sessions (`route-session.ts`), history (`route-history.ts`),
 * uploads, messages and typing (`route-messages.ts`), the site's data on the conversation (`route-data.ts`) and the Server-Sent Events stream
 * (`route-events.ts`), sharing `route-kit.ts`. Every endpoint a browser calls is rate limited per
 * visitor and per IP. CORS is granted only to the origins a site allows; every refusal is a clear
 * 4xx and a log line.
 */
import express, { type Router } from 'express';
import { createRouteKit, type WebRoutesOptions } from './route-kit.js';
import { addSiteDataRoute } from './route-data.js';
import { addEventStreamRoute } from './route-events.js';
import { addHistoryRoutes } from './route-history.js';
import { addMessageRoute, addTypingRoute, addUploadRoute } from './route-messages.js';
import { addSessionRoutes } from './route-session.js';
import { addPreflightRoutes, addScriptRoutes } from './route-static.js';

export type { WidgetBundle, WebRoutesOptions } from './route-kit.js';

export function createWebRouter(settings: WebRoutesOptions): Router {
  const kit = createRouteKit(settings);
  const router = express.Router();
  // Registered in this order (the preflight for a session before the one for every other path).
  addPreflightRoutes(router, kit);
  addScriptRoutes(router, kit);
  addSessionRoutes(router, kit);
  addHistoryRoutes(router, kit);
  addUploadRoute(router, kit);
  addMessageRoute(router, kit);
  addTypingRoute(router, kit);
  addSiteDataRoute(router, kit);
  addEventStreamRoute(router, kit);
  return router;
}
