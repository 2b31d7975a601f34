/** `GET /admin/usage?from=&to=`: model usage summed per day, role and channel (at most 366 days; `to` defaults to today, `from` to `to`). */
import type { Router } from 'express';
import { z } from 'zod';
import type { AdminHttp } from './admin-http.js';

/** Model usage summed per day, role and channel; implemented by the usage store. */
export interface UsageReader {
  summary(from: string, to: string): Promise<unknown>;
}

const MAX_USAGE_DAYS = 366;
const DAY_MS = 86_400_000;
const UsageQuerySchema = z
  .strictObject({ from: z.iso.date().optional(), to: z.iso.date().optional() })
  .transform(({ from, to }) => {
    const last = to ?? new Date().toISOString().slice(0, 10);
    return { from: from ?? last, to: last };
  })
  .refine(({ from, to }) => from <= to, { message: 'from must not be after to', path: ['from'] })
  .refine(({ from, to }) => Date.parse(to) - Date.parse(from) < MAX_USAGE_DAYS * DAY_MS, { message: `at most ${MAX_USAGE_DAYS} days`, path: ['from'] });

export function addUsageRoutes(router: Router, options: { usage: UsageReader; http: AdminHttp }): void {
  const { usage, http } = options;
  router.get('/admin/usage', async (request, response) => {
    const parsed = UsageQuerySchema.safeParse(request.query);
    if (!parsed.success) {
      http.invalid(request, response, parsed.error, 'query');
      return;
    }
    response.json(await usage.summary(parsed.data.from, parsed.data.to));
  });
}
