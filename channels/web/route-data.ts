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
/** A key: 1–40 of a-z, 0-9 and _, starting with a letter or digit (so never `__proto__`). */
const KEY = /^[a-z0-9][a-z0-9_]{0,39}$/;

/**
 * The site's data: at most 20 keys, each value text of at most 200 characters; an empty object
 * clears it. The keys are checked on the body as parsed (a `__proto__` key included), before the
 * record is built.
 */
const SiteDataRequestSchema = z.strictObject({
  data: z
    .unknown()
    .superRefine((value, context) => {
      for (const key of value !== null && typeof value === 'object' ? Object.keys(value) : []) {
        if (!KEY.test(key))
          context.addIssue({ code: 'custom', path: [key], message: 'a key is 1–40 characters of a-z, 0-9 or _, starting with a letter or digit' });
      }
    })
    .pipe(z.record(z.string(), z.string().max(200)).refine((data) => Object.keys(data).length <= MAX_KEYS, `at most ${MAX_KEYS} keys`)),
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
      {
        kind: 'conversation',
        _id: conversationKey,
        channel: WEB_CHANNEL_ID,
        address: conversationKey,
        siteData: parsed.data.data,
        at: new Date().toISOString(),
      },
    ]);
    await records.flush();
    logger.info('widget-site-data', { conversationKey, keys: Object.keys(parsed.data.data).length });
    response.status(204).end();
  });
}
