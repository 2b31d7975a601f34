/**
 * How a website-verified user finds their contact: through `_id`-keyed aliases (`ext:<id>`,
 * `email:<lowercase>`) the contact store keeps in step with every upsert, import and removal,
 * driven through the admin API. A contact may have no WhatsApp number (`user:<external id>`);
 * no two contacts may declare the same external id or email (409, nothing stored); and a
 * stale alias left by an interrupted write never matches the wrong contact.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Connection } from 'mongoose';
import request from 'supertest';
import { createAdminRouter } from '../../src/admin/admin-router.js';
import { createContactStore, type ContactStore } from '../../src/contacts/contact-store.js';
import { createApp } from '../../src/http/app.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { connectMongo } from '../../src/store/transcript-store.js';
import { testEnv, type LogLine } from '../support/harness.js';

const ADMIN_TOKEN = 'admin-token-for-tests-0123456789';

let mongo: Connection;
let contacts: ContactStore;
let http: ReturnType<typeof request>;
const logs: LogLine[] = [];
const logger = createLogger({ level: 'debug', sink: (line) => logs.push(JSON.parse(line) as LogLine) });
const metrics = createMetrics();

const put = (address: string, body: object) =>
  http
    .put(`/admin/contacts/${encodeURIComponent(address)}`)
    .set('Authorization', `Bearer ${ADMIN_TOKEN}`)
    .send(body);
const remove = (address: string) => http.delete(`/admin/contacts/${encodeURIComponent(address)}`).set('Authorization', `Bearer ${ADMIN_TOKEN}`);
const importRows = (rows: object[]) => http.post('/admin/contacts/import').set('Authorization', `Bearer ${ADMIN_TOKEN}`).send(rows);
const found = async (user: { externalId: string; email?: string }) => (await contacts.findVerifiedUser(user))?.address;

let sequence = 0;
const newAddress = () => `whatsapp:+447700901${String(++sequence).padStart(3, '0')}`;
const unique = (label: string) => `${label}-${++sequence}`;

beforeAll(async () => {
  mongo = await connectMongo(testEnv('http://127.0.0.1:9').MONGODB_URI!);
  contacts = createContactStore(mongo);
  await contacts.ensureIndexes();
  http = request(
    createApp({
      trustProxy: false,
      routers: [createAdminRouter({ adminToken: ADMIN_TOKEN, contacts, handoffs: { list: async () => [] }, logger, metrics })],
      readiness: [],
      logger,
      metrics,
      isShuttingDown: () => false,
    }),
  );
});
afterAll(async () => {
  await mongo.dropDatabase();
  await mongo.close();
});

describe('finding a verified user', () => {
  test('by external id, then by email in any case; an update moves the aliases, a removal drops them', async () => {
    const address = newAddress();
    const externalId = unique('u');
    const email = `${unique('amelia')}@Harbour.example`;
    expect((await put(address, { name: 'Amelia', externalId, email })).status).toBe(201);
    expect(await found({ externalId })).toBe(address);
    expect(await found({ externalId: 'nobody-has-this', email: email.toUpperCase() })).toBe(address);

    const newEmail = `${unique('amelia')}@harbour.example`;
    expect((await put(address, { name: 'Amelia', email: newEmail })).status).toBe(200);
    expect(await found({ externalId })).toBeUndefined();
    expect(await found({ externalId: 'x', email })).toBeUndefined();
    expect(await found({ externalId: 'x', email: newEmail })).toBe(address);

    expect((await remove(address)).status).toBe(204);
    expect(await found({ externalId: 'x', email: newEmail })).toBeUndefined();
  });

  test('a contact without WhatsApp is addressed user:<external id> and found by it', async () => {
    const externalId = unique('web-only');
    const created = await put(`user:${externalId}`, { name: 'Web Only', entities: [{ id: 'acct-1', name: 'One' }] });
    expect(created.status).toBe(201);
    expect(created.body.contact).toEqual({ address: `user:${externalId}`, name: 'Web Only', entities: [{ id: 'acct-1', name: 'One' }] });
    expect(await found({ externalId })).toBe(`user:${externalId}`);
    const mismatch = await put(`user:${externalId}`, { name: 'Web Only', externalId: 'someone-else' });
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.issues).toEqual([{ path: 'externalId', message: `differs from the external id in the address (${externalId})` }]);
    expect((await put('user:has space', { name: 'Bad' })).status).toBe(400);
  });

  test('a stale alias (its contact no longer declares it) matches nobody and can be taken over', async () => {
    const address = newAddress();
    const externalId = unique('stale');
    await contacts.upsert({ address, name: 'First', externalId, entities: [] });
    // A write cut short: the contact lost the id but its alias was never removed.
    await mongo.collection('contacts').updateOne({ _id: address as never }, { $unset: { externalId: 1 } });
    expect(await found({ externalId })).toBeUndefined();
    const other = newAddress();
    expect((await put(other, { name: 'Second', externalId })).status).toBe(201);
    expect(await found({ externalId })).toBe(other);
  });
});

describe('conflicts', () => {
  test('an external id or email another contact holds is refused with 409, and nothing changes', async () => {
    const holder = newAddress();
    const externalId = unique('held');
    const email = `${unique('held')}@example.test`;
    await put(holder, { name: 'Holder', externalId, email });
    const intruder = newAddress();
    const response = await put(intruder, { name: 'Intruder', externalId, email: email.toUpperCase() });
    expect(response.status).toBe(409);
    expect(response.body).toEqual({
      error: 'invalid contact',
      issues: [
        { path: 'externalId', message: `already declared by contact ${holder}` },
        { path: 'email', message: `already declared by contact ${holder}` },
      ],
    });
    expect(await contacts.get(intruder)).toBeUndefined();
    expect(await found({ externalId })).toBe(holder);
    expect(logs.filter((line) => line.event === 'admin-request-rejected').at(-1)).toMatchObject({ status: 409, reason: 'conflict' });
  });

  test('an import whose rows share an id or email, or take one another contact holds, stores nothing', async () => {
    const holder = newAddress();
    const heldEmail = `${unique('held')}@example.test`;
    await put(holder, { name: 'Holder', email: heldEmail });
    const shared = unique('shared');
    const duplicates = await importRows([
      { address: newAddress(), name: 'A', externalId: shared },
      { address: newAddress(), name: 'B', externalId: shared },
    ]);
    expect(duplicates.status).toBe(400);
    expect(duplicates.body.rows).toEqual([{ index: 1, issues: [{ path: 'externalId', message: 'same external id as row 0' }] }]);

    const fresh = newAddress();
    const conflicting = await importRows([
      { address: fresh, name: 'Fresh', externalId: unique('fresh') },
      { address: newAddress(), name: 'Taker', email: heldEmail },
    ]);
    expect(conflicting.status).toBe(409);
    expect(conflicting.body).toEqual({
      error: '1 of 2 rows declare an external id or email another contact holds; nothing was stored',
      rows: [{ index: 1, issues: [{ path: 'email', message: `already declared by contact ${holder}` }] }],
    });
    expect(await contacts.get(fresh)).toBeUndefined();
  });

  test('an import keeps aliases in step', async () => {
    const first = newAddress();
    const externalId = unique('imported');
    const response = await importRows([
      { address: first, name: 'Imported', externalId },
      { address: `user:${unique('imported-web')}`, name: 'Imported Web' },
    ]);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ created: 2, updated: 0 });
    expect(await found({ externalId })).toBe(first);
  });
});
