/**
 * `POST /api/widget/data`: what the site attaches to the visitor's conversation through the
 * script API's `setData` (a plan, a cart total). It is the website's word, not verified: bounded
 * here (a few short keys, short string values), stored on the conversation's transcript record
 * through the transcript outbox (no MongoDB round trip here) and shown to teammates on the
 * transcript page. It never enters a turn: not the inbound message, the prompt or the history.
 */
import type { Router } from 'express';
import { z } from 'zod';
import { formatIssues } from '../../src/errors/issues.js';
import { WEB_CHANNEL_ID } from './index.js';
import { conversationKeyOf, type RouteKit } from './route-kit.js';

const MAX_KEYS = 20;

/** The site's data: at most 20 keys of 1–40 `[a-z0-9_]`, each a string of at most 200 characters. An empty object clears it. */
const SiteDataRequestSchema = z.strictObject({
  data: z
    .record(z.string().regex(/^[a-z0-9_]{1,40}$/, 'keys are 1–40 characters of a-z, 0-9 or _'), z.string().max(200))
    .refine((data) => Object.keys(data).length <= MAX_KEYS, `at most ${MAX_KEYS} keys`),
});

export function addSiteDataRoute(router: Router, kit: RouteKit): void {
  const { options, logger, json, refuse, authenticate, withinRequestLimits } = kit;
  router.post('/api/widget/data', json, async (request, response) => {
    const visitor = authenticate(request, response);
    if (!visitor) return;
    if (!(await withinRequestLimits(request, response, visitor.claims.visitorId))) return;
    const parsed = SiteDataRequestSchema.safeParse(request.body);
    if (!parsed.success) {
      refuse(response, 400, formatIssues(parsed.error.issues), 'malformed_site_data');
      return;
    }
    const conversationKey = conversationKeyOf(visitor.claims);
    // The conversation's record with the data beside it (the transcript writer sets it by `_id`).
    const records = options.transcripts.turnRecords();
    records.add([
      { kind: 'conversation', _id: conversationKey, channel: WEB_CHANNEL_ID, address: conversationKey, siteData: parsed.data.data, at: new Date().toISOString() },
    ]);
    await records.flush();
    logger.info('widget-site-data', { conversationKey, keys: Object.keys(parsed.data.data).length });
    response.status(204).end();
  });
}
