/**
 * The operator API as an operator and an attacker see it: the bearer-token matrix (and the API
 * switched off), contacts stored in and read back from the MongoDB-wire server, an all-or-nothing
 * bulk import, cursor pagination, the hand-off list through a fake reader, and refusals that
 * say what was wrong, log a line and never repeat the token.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type express from 'express';
import type { Connection } from 'mongoose';
import request from 'supertest';
import { createAdminRouter, type HandoffReader } from '../../src/admin/admin-router.js';
import { createContactStore, type ContactStore } from '../../src/contacts/contact-store.js';
import { ConfigError } from '../../src/errors/index.js';
import { createApp } from '../../src/http/app.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { connectMongo } from '../../src/store/transcript-store.js';
import { testEnv, type LogLine } from '../support/harness.js';

const ADMIN_TOKEN = 'admin-token-for-tests-0123456789';
const WRONG_TOKEN = 'admin-token-for-tests-9876543210';

let mongo: Connection;
let contacts: ContactStore;
const logs: LogLine[] = [];
const logger = createLogger({ level: 'debug', sink: (line) => logs.push(JSON.parse(line) as LogLine) });
const metrics = createMetrics();
const handoffCalls: Parameters<HandoffReader['list']>[0][] = [];
const handoffs: HandoffReader = {
  async list(options) {
    handoffCalls.push(options);
    return [{ id: 'handoff-1', status: options.status ?? 'open', reason: 'wants a refund' }];
  },
};

function adminApp(adminToken: string | undefined): express.Express {
  return createApp({
    trustProxy: false,
    routers: [createAdminRouter({ adminToken, contacts, handoffs, logger, metrics })],
    readiness: [],
    logger,
    metrics,
    isShuttingDown: () => false,
  });
}

let http: ReturnType<typeof request>;
const authorized = {
  get: (path: string) => http.get(path).set('Authorization', `Bearer ${ADMIN_TOKEN}`),
  put: (path: string) => http.put(path).set('Authorization', `Bearer ${ADMIN_TOKEN}`),
  post: (path: string) => http.post(path).set('Authorization', `Bearer ${ADMIN_TOKEN}`),
  delete: (path: string) => http.delete(path).set('Authorization', `Bearer ${ADMIN_TOKEN}`),
};

let sequence = 0;
/** A fresh number in the UK range reserved for drama (+44 7700 900xxx). */
const newAddress = () => `whatsapp:+447700900${String(++sequence).padStart(3, '0')}`;
const contactPath = (address: string) => `/admin/contacts/${encodeURIComponent(address)}`;

beforeAll(async () => {
  // A database of its own on the suite's MongoDB-wire server (FerretDB), without the rest of the service.
  mongo = await connectMongo(testEnv('http://127.0.0.1:9').MONGODB_URI!);
  contacts = createContactStore(mongo);
  await contacts.ensureIndexes();
  http = request(adminApp(ADMIN_TOKEN));
});
afterAll(async () => {
  await mongo.dropDatabase();
  await mongo.close();
});

const rejections = () => logs.filter((line) => line.event === 'admin-request-rejected');

describe('authentication', () => {
  test('no Authorization header gets 401 with a Bearer challenge', async () => {
    const response = await http.get('/admin/contacts');
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ error: 'missing bearer token' });
    expect(response.headers['www-authenticate']).toBe('Bearer');
    expect(rejections().at(-1)).toMatchObject({ level: 'warn', status: 401, reason: 'token_missing', path: '/admin/contacts' });
  });

  test.each([
    ['another scheme', `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}`],
    ['an empty bearer', 'Bearer '],
  ])('%s counts as no token', async (_name, header) => {
    const response = await http.get('/admin/contacts').set('Authorization', header);
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ error: 'missing bearer token' });
  });

  test.each([
    ['a wrong token of the same length', WRONG_TOKEN],
    ['a prefix of the token', ADMIN_TOKEN.slice(0, 10)],
    ['the token with a suffix', `${ADMIN_TOKEN}x`],
  ])('%s gets 401 invalid token', async (_name, token) => {
    const response = await http.get('/admin/contacts').set('Authorization', `Bearer ${token}`);
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ error: 'invalid token' });
    expect(response.headers['www-authenticate']).toBe('Bearer error="invalid_token"');
    expect(rejections().at(-1)).toMatchObject({ status: 401, reason: 'token_invalid' });
  });

  test('the right token is accepted, with any case of the scheme, and answers are not cached', async () => {
    const response = await http.get('/admin/contacts').set('Authorization', `bearer ${ADMIN_TOKEN}`);
    expect(response.status).toBe(200);
    expect(response.headers['cache-control']).toBe('no-store');
  });

  test('the token is checked before the body is read', async () => {
    const response = await http
      .put(contactPath(newAddress()))
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) }));
    expect(response.status).toBe(401);
  });

  test('an unknown admin path needs the token too, then is a plain 404', async () => {
    expect((await http.get('/admin/secrets')).status).toBe(401);
    expect((await authorized.get('/admin/secrets')).status).toBe(404);
  });

  test('without ADMIN_TOKEN the API does not exist, even for a caller with a token', async () => {
    const disabled = request(adminApp(undefined));
    for (const response of [await disabled.get('/admin/contacts'), await disabled.get('/admin/contacts').set('Authorization', `Bearer ${ADMIN_TOKEN}`)]) {
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ error: 'no route for GET /admin/contacts' });
    }
    expect(rejections().at(-1)).toMatchObject({ status: 404, reason: 'disabled' });
    expect(logs.some((line) => line.event === 'admin-api-disabled')).toBe(true);
  });

  test('a token shorter than 24 characters is refused at start-up', () => {
    expect(() => createAdminRouter({ adminToken: 'short-token', contacts, handoffs, logger, metrics })).toThrow(ConfigError);
  });
});

describe('contacts', () => {
  test('create, read, replace, delete round trip', async () => {
    const address = newAddress();
    const fields = {
      name: 'Amelia Hart',
      email: 'amelia@harbour-lane.example',
      customerId: 'CUS-1042',
      entities: [
        { id: 'acct-77', name: 'Harbour Lane Bakery' },
        { id: 'acct-78', name: 'Harbour Lane Café' },
      ],
    };
    const created = await authorized.put(contactPath(address)).send(fields);
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ result: 'created', contact: { address, ...fields } });
    expect((await authorized.get(contactPath(address))).body).toEqual({ contact: { address, ...fields } });

    // The address may be repeated in the body; left-out optional fields are removed.
    const replaced = await authorized
      .put(contactPath(address))
      .send({ address, name: 'Amelia Hart-Jones', entities: [{ id: 'acct-78', name: 'Harbour Lane Café' }] });
    expect(replaced.status).toBe(200);
    expect(replaced.body.result).toBe('updated');
    expect((await authorized.get(contactPath(address))).body).toEqual({
      contact: { address, name: 'Amelia Hart-Jones', entities: [{ id: 'acct-78', name: 'Harbour Lane Café' }] },
    });
    expect(await contacts.get(address)).toEqual({ address, name: 'Amelia Hart-Jones', entities: [{ id: 'acct-78', name: 'Harbour Lane Café' }] });

    expect((await authorized.delete(contactPath(address))).status).toBe(204);
    const gone = await authorized.get(contactPath(address));
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ error: 'unknown contact' });
    expect((await authorized.delete(contactPath(address))).status).toBe(404);
  });

  test('the same new contact PUT several times at once: every request succeeds, exactly one creates it', async () => {
    const address = newAddress();
    const fields = { name: 'Idris Vale', email: 'idris@vale-joinery.example', customerId: 'CUS-2077' };
    const answers = await Promise.all(Array.from({ length: 8 }, () => authorized.put(contactPath(address)).send(fields)));
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 201]);
    expect(answers.filter((answer) => answer.body.result === 'created')).toHaveLength(1);
    expect(await contacts.get(address)).toMatchObject({ address, ...fields });
    expect((await contacts.findVerifiedUser({ externalId: 'not-linked', email: 'idris@vale-joinery.example' }))?.address).toBe(address);
  });

  test('the address may be sent unencoded in the path', async () => {
    const address = newAddress();
    expect((await authorized.put(`/admin/contacts/${address}`).send({ name: 'Unencoded' })).status).toBe(201);
    expect((await authorized.get(`/admin/contacts/${address}`)).body.contact).toEqual({ address, name: 'Unencoded', entities: [] });
  });

  test('an invalid contact gets 400 naming every bad field, and nothing is stored', async () => {
    const address = newAddress();
    const response = await authorized.put(contactPath(address)).send({
      name: '',
      email: 'not-an-email',
      entities: [
        { id: 'acct-1', name: 'One' },
        { id: 'acct-1', name: 'One again' },
        { id: '', name: 'Nameless' },
      ],
      nickname: 'Ami',
    });
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('invalid contact');
    const paths = (response.body.issues as { path: string; message: string }[]).map((issue) => issue.path).sort();
    expect(paths).toEqual(['(body)', 'email', 'entities.1.id', 'entities.2.id', 'name']);
    expect(response.body.issues).toContainEqual({ path: '(body)', message: 'unknown field: nickname' });
    expect(response.body.issues).toContainEqual({ path: 'entities.1.id', message: 'duplicate entity id (same as entities.0.id)' });
    expect(await contacts.get(address)).toBeUndefined();
    expect(rejections().at(-1)).toMatchObject({ status: 400, reason: 'invalid_request' });
  });

  test('more than 50 entities are refused', async () => {
    const entities = Array.from({ length: 51 }, (_, index) => ({ id: `acct-${index}`, name: `Account ${index}` }));
    const response = await authorized.put(contactPath(newAddress())).send({ name: 'Many', entities });
    expect(response.status).toBe(400);
    expect(response.body.issues).toEqual([{ path: 'entities', message: expect.stringContaining('50') }]);
  });

  test('a body naming another address is refused', async () => {
    const response = await authorized.put(contactPath(newAddress())).send({ address: newAddress(), name: 'Mismatch' });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ error: 'invalid contact', issues: [{ path: 'address', message: 'differs from the address in the path' }] });
  });

  test.each(['+447700900999', 'whatsapp:447700900999', 'whatsapp:+0123', 'sms:+447700900999'])('the malformed address %s gets 400', async (address) => {
    const response = await authorized.get(contactPath(address));
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ error: 'invalid address', issues: [{ path: 'address', message: expect.stringContaining('whatsapp:+') }] });
  });

  test('a body over 1 MB gets 413 from the app', async () => {
    const response = await authorized
      .put(contactPath(newAddress()))
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ name: 'x'.repeat(1024 * 1024 + 1) }));
    expect(response.status).toBe(413);
    expect(response.body).toEqual({ error: 'request body too large' });
    expect(rejections().at(-1)).toMatchObject({ status: 413, reason: 'body' });
  });

  test('malformed JSON gets 400 and another content type 415', async () => {
    const malformed = await authorized.put(contactPath(newAddress())).set('Content-Type', 'application/json').send('{"name": ');
    expect(malformed.status).toBe(400);
    const form = await authorized.put(contactPath(newAddress())).type('form').send({ name: 'Form' });
    expect(form.status).toBe(415);
    expect(form.body).toEqual({ error: 'expected Content-Type: application/json' });
  });
});

describe('bulk import', () => {
  test('any invalid row stores nothing and every invalid row is reported', async () => {
    const valid = { address: newAddress(), name: 'Valid Row' };
    const duplicated = { address: newAddress(), name: 'First' };
    const response = await authorized
      .post('/admin/contacts/import')
      .send([
        valid,
        { address: 'whatsapp:12345', name: 'Bad Number' },
        duplicated,
        { ...duplicated, name: 'Second' },
        { address: newAddress(), name: 'Bad email', email: 'nope' },
      ]);
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('3 of 5 rows are invalid; nothing was stored');
    expect(response.body.rows).toEqual([
      { index: 1, issues: [{ path: 'address', message: expect.stringContaining('whatsapp:+') }] },
      { index: 3, issues: [{ path: 'address', message: 'duplicate of row 2' }] },
      { index: 4, issues: [{ path: 'email', message: expect.any(String) }] },
    ]);
    expect(await contacts.get(valid.address)).toBeUndefined();
    expect(await contacts.get(duplicated.address)).toBeUndefined();
  });

  test('valid rows are created or updated and counted', async () => {
    const existing = newAddress();
    await contacts.upsert({ address: existing, name: 'Before', email: 'before@example.test', entities: [] });
    const rows = [
      { address: newAddress(), name: 'Imported One', entities: [{ id: 'site-1', name: 'Dockside' }] },
      { address: existing, name: 'After', customerId: 'CUS-9' },
      { address: newAddress(), name: 'Imported Two' },
    ];
    const response = await authorized.post('/admin/contacts/import').send(rows);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ created: 2, updated: 1 });
    expect(await contacts.get(existing)).toEqual({ address: existing, name: 'After', customerId: 'CUS-9', entities: [] });
    expect(await contacts.get(rows[0]!.address)).toEqual({ ...rows[0], entities: [{ id: 'site-1', name: 'Dockside' }] });
    expect(metrics.value('admin_contacts_imported_total', { result: 'created' })).toBeGreaterThanOrEqual(2);
  });

  test('more than 1,000 rows or a non-array are refused', async () => {
    const tooMany = Array.from({ length: 1001 }, (_, index) => ({ address: `whatsapp:+1555010${String(index).padStart(4, '0')}`, name: 'Row' }));
    const response = await authorized.post('/admin/contacts/import').send(tooMany);
    expect(response.status).toBe(400);
    expect(response.body.issues).toEqual([{ path: '(body)', message: 'at most 1000 contacts per import' }]);
    const object = await authorized.post('/admin/contacts/import').send({ address: newAddress(), name: 'Not a list' });
    expect(object.status).toBe(400);
    expect(object.body.issues).toEqual([{ path: '(body)', message: 'expected a JSON array of contacts' }]);
  });
});

describe('listing', () => {
  test('pages through every contact in address order without gaps or repeats', async () => {
    await contacts.importMany(Array.from({ length: 7 }, () => ({ address: newAddress(), name: 'Listed', entities: [] })));
    const everything = (await authorized.get('/admin/contacts?limit=500')).body as { contacts: { address: string }[]; next: string | null };
    expect(everything.next).toBeNull();
    const all = everything.contacts.map((contact) => contact.address);
    expect(all.length).toBeGreaterThanOrEqual(7);
    expect(all).toEqual([...all].sort());

    const seen: string[] = [];
    let after: string | null = null;
    let pages = 0;
    do {
      const query: string = after ? `?limit=3&after=${encodeURIComponent(after)}` : '?limit=3';
      const page = (await authorized.get(`/admin/contacts${query}`)).body as { contacts: { address: string }[]; next: string | null };
      expect(page.contacts.length).toBeLessThanOrEqual(3);
      seen.push(...page.contacts.map((contact) => contact.address));
      after = page.next;
      pages += 1;
    } while (after !== null);
    expect(seen).toEqual(all);
    expect(pages).toBe(Math.ceil(all.length / 3));
  });

  test.each([
    ['limit=0', 'limit'],
    ['limit=501', 'limit'],
    ['limit=ten', 'limit'],
    ['after=someone', 'after'],
  ])('?%s gets 400 naming %s', async (query, path) => {
    const response = await authorized.get(`/admin/contacts?${query}`);
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('invalid query');
    expect(response.body.issues.map((issue: { path: string }) => issue.path)).toEqual([path]);
  });
});

describe('hand-offs', () => {
  test('lists through the hand-off reader with the status and limit asked for', async () => {
    const response = await authorized.get('/admin/handoffs?status=closed&limit=5');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ handoffs: [{ id: 'handoff-1', status: 'closed', reason: 'wants a refund' }] });
    expect(handoffCalls.at(-1)).toEqual({ status: 'closed', limit: 5 });
    await authorized.get('/admin/handoffs');
    expect(handoffCalls.at(-1)).toEqual({ limit: 50 });
  });

  test('an unknown status gets 400', async () => {
    const response = await authorized.get('/admin/handoffs?status=pending');
    expect(response.status).toBe(400);
    expect(response.body.issues.map((issue: { path: string }) => issue.path)).toEqual(['status']);
  });

  test('needs the token like everything else', async () => {
    expect((await http.get('/admin/handoffs').set('Authorization', `Bearer ${WRONG_TOKEN}`)).status).toBe(401);
  });
});

test('no log line or response ever contains the token', () => {
  const written = JSON.stringify(logs);
  expect(written).not.toContain(ADMIN_TOKEN);
  expect(written).not.toContain(WRONG_TOKEN);
  expect(rejections().length).toBeGreaterThan(10);
  expect(rejections().every((line) => typeof line.reason === 'string' && typeof line.status === 'number')).toBe(true);
});
