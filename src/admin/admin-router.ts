/**
 * The operator API under `/admin`: contacts (one, a page, a bulk import), the hand-off
 * list and its actions (take over, hand back, close — recorded with the operator's name). A contact is addressed by its WhatsApp number or, without one, by `user:<external id>`;
 * its external id and email are how a website-verified visitor is matched to it, so no two
 * contacts may declare the same one (409). Every request needs `Authorization: Bearer <ADMIN_TOKEN>`; without a configured token
 * the API does not exist (404, like any unknown path). Bodies are parsed only after the token
 * is checked, and every refusal is a 4xx with a reason plus an `admin-request-rejected` line.
 * This router must never echo or log the token, and never store part of an invalid import.
 */
import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import { z } from 'zod';
import { ContactAddressSchema, ContactConflictError, ContactFieldsSchema, ContactSchema, type Contact, type ContactStore } from '../contacts/contact-store.js';
import { ConfigError, errorStatus } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { addActionRoutes, type ActionReader } from './admin-actions.js';
import { createBearerCheck } from './bearer-token.js';
import { describeIssues, type FieldIssue } from '../errors/issues.js';
import { HANDOFF_STATUSES, type HandoffStatus } from '../handoff/handoff-store.js';
import type { TakeoverService } from '../takeover/takeover.js';

/** Reads hand-offs for operators; implemented by the hand-off store. */
export interface HandoffReader {
  list(options: { status?: HandoffStatus; limit: number }): Promise<unknown[]>;
}

/** Model usage summed per day, role and channel; implemented by the usage store. */
export interface UsageReader {
  summary(from: string, to: string): Promise<unknown>;
}

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
const MAX_IMPORT_ROWS = 1000;
const MAX_PAGE_SIZE = 500;

const pageSize = (fallback: number) => z.coerce.number().int().min(1).max(MAX_PAGE_SIZE).default(fallback);

const ContactBodySchema = ContactFieldsSchema.extend({ address: ContactAddressSchema.optional() });

const ImportBodySchema = z
  .array(z.unknown(), { error: 'expected a JSON array of contacts' })
  .max(MAX_IMPORT_ROWS, `at most ${MAX_IMPORT_ROWS} contacts per import`);

const ContactListQuerySchema = z.object({ limit: pageSize(100), after: ContactAddressSchema.optional() });

const HandoffListQuerySchema = z.object({ status: z.enum(HANDOFF_STATUSES).optional(), limit: pageSize(50) });

const HandoffIdSchema = z.string().regex(/^ho_[0-9a-f]{20}$/, 'expected a hand-off id (ho_ followed by 20 hex digits)');
/** Who is acting: their name is recorded on the hand-off (`admin:<name>`). */
const HandoffActionSchema = z.strictObject({ name: z.string().trim().min(1).max(40) });

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

interface RowError {
  index: number;
  issues: FieldIssue[];
}

const conflictIssues = (error: ContactConflictError, index?: number): FieldIssue[] =>
  error.conflicts
    .filter((conflict) => conflict.index === index)
    .map((conflict) => ({ path: conflict.field, message: `already declared by contact ${conflict.heldBy}` }));

/** Validates every row before anything is stored; duplicates of an earlier row are errors too. */
function validateImport(rows: readonly unknown[]): { contacts: Contact[]; errors: RowError[] } {
  const contacts: Contact[] = [];
  const errors: RowError[] = [];
  const firstRowOf = new Map<string, number>();
  const firstExternalIdOf = new Map<string, number>();
  const firstEmailOf = new Map<string, number>();
  rows.forEach((row, index) => {
    const parsed = ContactSchema.safeParse(row);
    if (!parsed.success) {
      errors.push({ index, issues: describeIssues(parsed.error.issues) });
      return;
    }
    const first = firstRowOf.get(parsed.data.address);
    if (first !== undefined) {
      errors.push({ index, issues: [{ path: 'address', message: `duplicate of row ${first}` }] });
      return;
    }
    const externalId = parsed.data.externalId ?? (parsed.data.address.startsWith('user:') ? parsed.data.address.slice(5) : undefined);
    const email = parsed.data.email?.toLowerCase();
    const issues: FieldIssue[] = [];
    const externalFirst = externalId === undefined ? undefined : firstExternalIdOf.get(externalId);
    if (externalFirst !== undefined) issues.push({ path: 'externalId', message: `same external id as row ${externalFirst}` });
    const emailFirst = email === undefined ? undefined : firstEmailOf.get(email);
    if (emailFirst !== undefined) issues.push({ path: 'email', message: `same email as row ${emailFirst}` });
    if (issues.length > 0) {
      errors.push({ index, issues });
      return;
    }
    firstRowOf.set(parsed.data.address, index);
    if (externalId !== undefined) firstExternalIdOf.set(externalId, index);
    if (email !== undefined) firstEmailOf.set(email, index);
    contacts.push(parsed.data);
  });
  return { contacts, errors };
}

export function createAdminRouter(options: AdminRouterOptions): Router {
  const { contacts, handoffs, logger, metrics } = options;
  const router = express.Router();

  const logRejection = (request: Request, status: number, reason: string) => {
    metrics.increment('admin_rejected_total', { reason });
    logger.warn('admin-request-rejected', { method: request.method, path: request.baseUrl + request.path, status, reason });
  };
  const refuse = (request: Request, response: Response, status: number, reason: string, body: { error: string; [field: string]: unknown }) => {
    logRejection(request, status, reason);
    response.status(status).json(body);
  };

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
  const checkBearer = createBearerCheck(options.adminToken);

  router.use('/admin', (request, response, next) => {
    response.set('Cache-Control', 'no-store');
    const check = checkBearer(request.get('authorization'));
    if (check === 'ok') {
      next();
      return;
    }
    response.set('WWW-Authenticate', check === 'missing' ? 'Bearer' : 'Bearer error="invalid_token"');
    refuse(request, response, 401, `token_${check}`, { error: check === 'missing' ? 'missing bearer token' : 'invalid token' });
  });

  const parseJson = express.json({ limit: '1mb', strict: true });
  /** JSON bodies only, up to 1 MB; parser failures go on to the app's error handler (400/413). */
  const jsonBody: RequestHandler = (request, response, next) => {
    if (!request.is('application/json')) {
      refuse(request, response, 415, 'content_type', { error: 'expected Content-Type: application/json' });
      return;
    }
    parseJson(request, response, (error?: unknown) => {
      if (error) logRejection(request, errorStatus(error) || 400, 'body');
      next(error);
    });
  };

  /** The `:address` path parameter, or undefined after answering 400. */
  const addressParameter = (request: Request, response: Response): string | undefined => {
    const parsed = ContactAddressSchema.safeParse(request.params.address);
    if (parsed.success) return parsed.data;
    refuse(request, response, 400, 'invalid_address', { error: 'invalid address', issues: describeIssues(parsed.error.issues, 'address') });
    return undefined;
  };

  const invalid = (request: Request, response: Response, error: z.ZodError, what: string) =>
    refuse(request, response, 400, 'invalid_request', { error: `invalid ${what}`, issues: describeIssues(error.issues) });

  router.put('/admin/contacts/:address', jsonBody, async (request, response) => {
    const address = addressParameter(request, response);
    if (!address) return;
    const parsed = ContactBodySchema.safeParse(request.body);
    if (!parsed.success) {
      invalid(request, response, parsed.error, 'contact');
      return;
    }
    if (parsed.data.address !== undefined && parsed.data.address !== address) {
      refuse(request, response, 400, 'address_mismatch', {
        error: 'invalid contact',
        issues: [{ path: 'address', message: 'differs from the address in the path' }],
      });
      return;
    }
    const checked = ContactSchema.safeParse({ ...parsed.data, address });
    if (!checked.success) {
      invalid(request, response, checked.error, 'contact');
      return;
    }
    const contact: Contact = checked.data;
    let result: 'created' | 'updated';
    try {
      result = await contacts.upsert(contact);
    } catch (error) {
      if (!(error instanceof ContactConflictError)) throw error;
      refuse(request, response, 409, 'conflict', { error: 'invalid contact', issues: conflictIssues(error) });
      return;
    }
    logger.info('admin-contact-saved', { address, result });
    response.status(result === 'created' ? 201 : 200).json({ result, contact });
  });

  router.get('/admin/contacts/:address', async (request, response) => {
    const address = addressParameter(request, response);
    if (!address) return;
    const contact = await contacts.get(address);
    if (!contact) {
      refuse(request, response, 404, 'unknown_contact', { error: 'unknown contact' });
      return;
    }
    response.json({ contact });
  });

  router.delete('/admin/contacts/:address', async (request, response) => {
    const address = addressParameter(request, response);
    if (!address) return;
    if (!(await contacts.remove(address))) {
      refuse(request, response, 404, 'unknown_contact', { error: 'unknown contact' });
      return;
    }
    logger.info('admin-contact-removed', { address });
    response.status(204).end();
  });

  router.get('/admin/contacts', async (request, response) => {
    const parsed = ContactListQuerySchema.safeParse(request.query);
    if (!parsed.success) {
      invalid(request, response, parsed.error, 'query');
      return;
    }
    const { limit, after } = parsed.data;
    // One extra row says whether another page exists without a count (a scan on FerretDB).
    const page = await contacts.list(limit + 1, after);
    const more = page.length > limit;
    const shown = more ? page.slice(0, limit) : page;
    response.json({ contacts: shown, next: more ? (shown.at(-1)?.address ?? null) : null });
  });

  router.post('/admin/contacts/import', jsonBody, async (request, response) => {
    const parsed = ImportBodySchema.safeParse(request.body);
    if (!parsed.success) {
      invalid(request, response, parsed.error, 'import');
      return;
    }
    const { contacts: rows, errors } = validateImport(parsed.data);
    if (errors.length > 0) {
      refuse(request, response, 400, 'invalid_rows', {
        error: `${errors.length} of ${parsed.data.length} rows are invalid; nothing was stored`,
        rows: errors,
      });
      return;
    }
    let counts: { created: number; updated: number };
    try {
      counts = await contacts.importMany(rows);
    } catch (error) {
      if (!(error instanceof ContactConflictError)) throw error;
      const conflicting = [...new Set(error.conflicts.map((conflict) => conflict.index))];
      refuse(request, response, 409, 'conflict', {
        error: `${conflicting.length} of ${rows.length} rows declare an external id or email another contact holds; nothing was stored`,
        rows: conflicting.map((index) => ({ index, issues: conflictIssues(error, index) })),
      });
      return;
    }
    metrics.increment('admin_contacts_imported_total', { result: 'created' }, counts.created);
    metrics.increment('admin_contacts_imported_total', { result: 'updated' }, counts.updated);
    logger.info('admin-contacts-imported', counts);
    response.json(counts);
  });

  router.get('/admin/handoffs', async (request, response) => {
    const parsed = HandoffListQuerySchema.safeParse(request.query);
    if (!parsed.success) {
      invalid(request, response, parsed.error, 'query');
      return;
    }
    const { status, limit } = parsed.data;
    response.json({ handoffs: await handoffs.list({ ...(status ? { status } : {}), limit }) });
  });

  const { takeover } = options;
  if (takeover) {
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

  if (options.actions) addActionRoutes(router, { actions: options.actions, jsonBody, refuse, invalid, logger, metrics });

  const { usage } = options;
  if (usage) {
    router.get('/admin/usage', async (request, response) => {
      const parsed = UsageQuerySchema.safeParse(request.query);
      if (!parsed.success) {
        invalid(request, response, parsed.error, 'query');
        return;
      }
      response.json(await usage.summary(parsed.data.from, parsed.data.to));
    });
  }

  return router;
}
