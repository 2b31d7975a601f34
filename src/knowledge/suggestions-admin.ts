/**
 * The operator's side of "Learned from your team", under the knowledge router's bearer check:
 *   GET    /admin/knowledge/suggestions?status=pending|nothing|failed|drafting|approved|dismissed|all (default pending)
 *   POST   /admin/knowledge/suggestions/{id}/approve  — optional JSON `{ question?, answer?, url?, sites? }` edits; 201 with the FAQ id
 *   DELETE /admin/knowledge/suggestions/{id}          — dismissed, never used; 204
 * 404 for an unknown id, 409 for one already decided (or still drafting).
 */
import type { Request, Response, Router } from 'express';
import { z } from 'zod';
import { AudienceSchema } from './model.js';
import type { Decision } from './suggestions-decide.js';
import { SUGGESTION_STATUSES, type SuggestionRecord } from './suggestions-records.js';
import type { Suggestions } from './suggestions.js';

const SuggestionIdSchema = z.string().regex(/^sug_[0-9a-f]{16}$/, 'expected a suggestion id');
const ListQuerySchema = z.strictObject({ status: z.enum([...SUGGESTION_STATUSES, 'all']).default('pending') });
const EditsSchema = z.strictObject({
  question: z.string().trim().min(3).max(500).optional(),
  answer: z.string().trim().min(1).max(10_000).optional(),
  url: z.url({ protocol: /^https?$/ }).optional(),
  sites: AudienceSchema.optional(),
});

export interface RouteHelpers {
  refuse(request: Request, response: Response, status: number, reason: string, body: Record<string, unknown>): void;
  invalid(request: Request, response: Response, error: z.ZodError, what: string): void;
  /** Parses a JSON body (415 for another type). */
  jsonOnly(request: Request, response: Response, next: (error?: unknown) => void): void;
}

const view = (record: SuggestionRecord) => ({
  id: record._id,
  status: record.status,
  question: record.question,
  answer: record.answer,
  exchange: record.exchange,
  handoffId: record.handoffId,
  channel: record.channel,
  ...(record.faqId ? { faqId: record.faqId } : {}),
  ...(record.error ? { error: record.error } : {}),
  createdAt: record.createdAt,
  ...(record.decidedAt ? { decidedAt: record.decidedAt } : {}),
});

export function suggestionRoutes(router: Router, suggestions: Suggestions, helpers: RouteHelpers): void {
  const { refuse, invalid } = helpers;
  const settle = <T>(request: Request, response: Response, decision: Decision<T>, done: (value: T) => void) => {
    if (decision.outcome === 'unknown') return refuse(request, response, 404, 'unknown_suggestion', { error: 'unknown suggestion' });
    if (decision.outcome === 'conflict') return refuse(request, response, 409, 'suggestion_decided', { error: decision.reason });
    done(decision.value);
  };
  // A body is optional: parsed (JSON only) when there is one.
  const optionalJson = (request: Request, response: Response, next: (error?: unknown) => void) => {
    if (request.headers['content-length'] === '0' || (!request.headers['content-type'] && !request.headers['transfer-encoding'])) {
      next();
      return;
    }
    helpers.jsonOnly(request, response, next);
  };

  router.get('/admin/knowledge/suggestions', async (request, response) => {
    const query = ListQuerySchema.safeParse(request.query);
    if (!query.success) return invalid(request, response, query.error, 'query');
    const statuses = query.data.status === 'all' ? SUGGESTION_STATUSES : [query.data.status];
    response.json({ suggestions: (await suggestions.list(statuses)).map(view) });
  });

  router.post('/admin/knowledge/suggestions/:id/approve', optionalJson, async (request, response) => {
    const id = SuggestionIdSchema.safeParse(request.params.id);
    if (!id.success) return invalid(request, response, id.error, 'id');
    const edits = EditsSchema.safeParse((request.body as unknown) ?? {});
    if (!edits.success) return invalid(request, response, edits.error, 'edits');
    settle(request, response, await suggestions.approve(id.data, edits.data), (approved) => response.status(201).json({ id: id.data, ...approved }));
  });

  router.delete('/admin/knowledge/suggestions/:id', async (request, response) => {
    const id = SuggestionIdSchema.safeParse(request.params.id);
    if (!id.success) return invalid(request, response, id.error, 'id');
    settle(request, response, await suggestions.dismiss(id.data), () => response.status(204).end());
  });
}
