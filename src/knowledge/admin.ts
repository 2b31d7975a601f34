/**
 * The operator API for the knowledge, under `/admin/knowledge`, behind the admin API's bearer
 * token (absent token: the paths do not exist). FAQ entries and documents are added and
 * removed, sources added, re-crawled and removed, everything listed with chunk counts, last
 * crawl and errors, and the questions nothing answered listed. Every body is checked (zod for
 * JSON, the content sniffer for uploads); a refusal is a 4xx with a reason and a
 * `knowledge-request-rejected` line.
 */
import express, { type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import { requireBearer } from '../admin/bearer-token.js';
import { describeIssues } from '../errors/issues.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { MediaRejectedError } from '../media/content-check.js';
import type { KnowledgeService } from './service.js';
import { suggestionRoutes } from './suggestions-admin.js';
import type { Suggestions } from './suggestions.js';
import { AudienceSchema, SourceInputSchema } from './model.js';

const FaqEntrySchema = z.strictObject({
  question: z.string().trim().min(3).max(500),
  answer: z.string().trim().min(1).max(10_000),
  url: z.url({ protocol: /^https?$/ }).optional(),
  sites: AudienceSchema.optional(),
});
const FaqBodySchema = z.union([
  FaqEntrySchema.transform((entry) => [entry]),
  z.strictObject({ entries: z.array(FaqEntrySchema).min(1).max(200) }).transform((body) => body.entries),
]);

const DocumentQuerySchema = z.strictObject({
  title: z.string().trim().min(1).max(200).optional(),
  filename: z.string().trim().min(1).max(200).optional(),
  url: z.url({ protocol: /^https?$/ }).optional(),
  sites: z
    .string()
    .transform((value) =>
      value
        .split(',')
        .map((site) => site.trim())
        .filter(Boolean),
    )
    .pipe(AudienceSchema)
    .optional(),
});

const KindSchema = z.enum(['faq', 'documents', 'sources', 'pages']);
const IdSchema = z.string().regex(/^(faq|doc|src)_[0-9a-f]{16}$|^page:[0-9a-f]{24}$/, 'expected a knowledge id');
const MissesQuerySchema = z.strictObject({ limit: z.coerce.number().int().min(1).max(500).default(100) });
const CrawlQuerySchema = z.strictObject({ wait: z.enum(['true', 'false', '1', '0']).optional() });

export function createKnowledgeRouter(options: {
  adminToken: string | undefined;
  service: KnowledgeService;
  maxDocumentBytes: number;
  logger: Logger;
  metrics: Metrics;
  /** FAQ suggestions learned from the team (`/admin/knowledge/suggestions`). */
  suggestions?: Suggestions | undefined;
}): Router {
  const { service, logger, metrics } = options;
  const router = express.Router();
  if (!options.adminToken) return router;

  const refuse = (request: Request, response: Response, status: number, reason: string, body: Record<string, unknown>) => {
    metrics.increment('admin_rejected_total', { reason });
    logger.warn('knowledge-request-rejected', { method: request.method, path: request.baseUrl + request.path, status, reason });
    response.status(status).json(body);
  };
  const invalid = (request: Request, response: Response, error: z.ZodError, what: string) =>
    refuse(request, response, 400, 'invalid_request', { error: `invalid ${what}`, issues: describeIssues(error.issues) });

  router.use('/admin/knowledge', requireBearer(options.adminToken, refuse));

  const json = express.json({ limit: '2mb', strict: true });
  const jsonOnly = (request: Request, response: Response, next: (error?: unknown) => void) => {
    if (!request.is('application/json')) {
      refuse(request, response, 415, 'content_type', { error: 'expected Content-Type: application/json' });
      return;
    }
    json(request, response, next);
  };
  // Before `DELETE /admin/knowledge/:kind/:id`, which would take "suggestions" for a kind.
  if (options.suggestions) suggestionRoutes(router, options.suggestions, { refuse, invalid, jsonOnly });

  router.get('/admin/knowledge', async (_request, response) => {
    response.json(await service.overview());
  });

  router.get('/admin/knowledge/misses', async (request, response) => {
    const query = MissesQuerySchema.safeParse(request.query);
    if (!query.success) return invalid(request, response, query.error, 'query');
    response.json({ misses: await service.misses.list(query.data.limit) });
  });

  router.post('/admin/knowledge/faq', jsonOnly, async (request, response) => {
    const parsed = FaqBodySchema.safeParse(request.body);
    if (!parsed.success) return invalid(request, response, parsed.error, 'FAQ');
    const added = await service.addFaq(parsed.data);
    logger.info('knowledge-faq-added', { count: added.length });
    response.status(201).json({ entries: added });
  });

  router.post('/admin/knowledge/documents', express.raw({ type: () => true, limit: options.maxDocumentBytes }), async (request, response) => {
    const query = DocumentQuerySchema.safeParse(request.query);
    if (!query.success) return invalid(request, response, query.error, 'query');
    const body = request.body as unknown;
    if (!Buffer.isBuffer(body) || body.length === 0) return refuse(request, response, 400, 'empty', { error: 'expected the document as the request body' });
    try {
      const added = await service.addDocument({ bytes: body, contentType: request.get('content-type') ?? '', ...query.data });
      logger.info('knowledge-document-added', { id: added.id, chunks: added.chunks, dropped: added.dropped });
      response.status(201).json(added);
    } catch (error) {
      if (!(error instanceof MediaRejectedError)) throw error;
      refuse(request, response, 415, error.reason, { error: error.message });
    }
  });

  router.post('/admin/knowledge/sources', jsonOnly, async (request, response) => {
    const parsed = SourceInputSchema.safeParse(request.body);
    if (!parsed.success) return invalid(request, response, parsed.error, 'source');
    const source = await service.addSource(parsed.data, 'admin');
    logger.info('knowledge-source-added', { id: source._id, url: source.url });
    service.crawlInBackground(source._id);
    response.status(201).json({ id: source._id, url: source.url, crawl: 'started' });
  });

  router.post('/admin/knowledge/sources/:id/crawl', async (request, response) => {
    const id = IdSchema.safeParse(request.params.id);
    if (!id.success) return invalid(request, response, id.error, 'id');
    const query = CrawlQuerySchema.safeParse(request.query);
    if (!query.success) return invalid(request, response, query.error, 'query');
    if (!(await service.store.getSource(id.data))) return refuse(request, response, 404, 'unknown_source', { error: 'unknown source' });
    if (query.data.wait === 'true' || query.data.wait === '1') {
      const report = await service.crawl(id.data);
      if (!report) return refuse(request, response, 409, 'crawl_running', { error: 'a crawl of this source is already running' });
      response.json(report);
      return;
    }
    service.crawlInBackground(id.data);
    response.status(202).json({ id: id.data, crawl: 'started' });
  });

  router.delete('/admin/knowledge/:kind/:id', async (request, response) => {
    const kind = KindSchema.safeParse(request.params.kind);
    const id = IdSchema.safeParse(request.params.id);
    if (!kind.success) return invalid(request, response, kind.error, 'kind');
    if (!id.success) return invalid(request, response, id.error, 'id');
    const removed = await service.remove(kind.data, id.data);
    if (!removed) return refuse(request, response, 404, 'unknown_item', { error: `unknown ${kind.data} item` });
    logger.info('knowledge-removed', { kind: kind.data, id: id.data });
    response.status(204).end();
  });

  return router;
}
