/**
 * The admin API's contacts: one (`PUT`/`GET`/`DELETE /admin/contacts/:address`), a page
 * (`GET /admin/contacts?limit=&after=`) and a bulk import (`POST /admin/contacts/import`). A
 * contact is addressed by its WhatsApp number or, without one, by `user:<external id>`; no two
 * contacts may declare the same external id or email (409). An import is validated whole before
 * anything is stored: never part of an invalid one.
 */
import type { Request, Response, Router } from 'express';
import { z } from 'zod';
import { ContactAddressSchema, ContactConflictError, ContactFieldsSchema, ContactSchema, type Contact, type ContactStore } from '../contacts/contact-store.js';
import { describeIssues, type FieldIssue } from '../errors/issues.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { pageSize, type AdminHttp } from './admin-http.js';

const MAX_IMPORT_ROWS = 1000;

const ContactBodySchema = ContactFieldsSchema.extend({ address: ContactAddressSchema.optional() });

const ImportBodySchema = z
  .array(z.unknown(), { error: 'expected a JSON array of contacts' })
  .max(MAX_IMPORT_ROWS, `at most ${MAX_IMPORT_ROWS} contacts per import`);

const ContactListQuerySchema = z.object({ limit: pageSize(100), after: ContactAddressSchema.optional() });

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

interface ContactRoutesOptions {
  contacts: ContactStore;
  http: AdminHttp;
  logger: Logger;
  metrics: Metrics;
}

export function addContactRoutes(router: Router, options: ContactRoutesOptions): void {
  const { contacts, http, logger } = options;
  const { refuse, invalid, jsonBody } = http;

  /** The `:address` path parameter, or undefined after answering 400. */
  const addressParameter = (request: Request, response: Response): string | undefined => {
    const parsed = ContactAddressSchema.safeParse(request.params.address);
    if (parsed.success) return parsed.data;
    refuse(request, response, 400, 'invalid_address', { error: 'invalid address', issues: describeIssues(parsed.error.issues, 'address') });
    return undefined;
  };

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

  router.post('/admin/contacts/import', jsonBody, (request, response) => importContacts(request, response, options));
}

/** `POST /admin/contacts/import`: every row valid and no external id or email held elsewhere, or nothing is stored. */
async function importContacts(request: Request, response: Response, options: ContactRoutesOptions): Promise<void> {
  const { contacts, http, logger, metrics } = options;
  const { refuse, invalid } = http;
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
}
