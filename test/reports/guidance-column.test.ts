/**
 * Guidance at work in the reports, on real FerretDB and Redis through the real transcript writer:
 * each reply's first part records the guidance entries its prompt quoted and those the judge
 * found applying; the summary has them per entry, the page and the CSV a table of them, and a
 * rebuild from MongoDB's messages gives the same roll-ups.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import express from 'express';
import request from 'supertest';
import { createReportsFeature, type ReportsFeature } from '../../src/reports/index.js';
import { ROLLUP_COLLECTION } from '../../src/reports/rollup-store.js';
import type { TranscriptRecord } from '../../src/store/outbox.js';
import { createTranscriptWriter } from '../../src/store/transcript-writer.js';
import { startHarness, type Harness } from '../support/harness.js';

const TOKEN = 'reports-guidance-token-0123456789abcdef';
const DAY = '2026-11-04';
const at = (minute: number) => new Date(Date.parse(`${DAY}T09:00:00Z`) + minute * 60_000).toISOString();
const CONVERSATION = 'whatsapp:+447700900701';

const message = (id: string, direction: 'inbound' | 'outbound', minute: number, guidance?: { entries: string[]; applied: string[] }): TranscriptRecord => ({
  kind: 'message',
  message: {
    _id: id,
    conversationId: CONVERSATION,
    channel: 'whatsapp',
    direction,
    text: `text of ${id}`,
    status: direction === 'inbound' ? 'received' : 'pending',
    ...(direction === 'outbound' ? { roleId: 'support' } : {}),
    ...(guidance ? { guidance } : {}),
    createdAt: at(minute),
    updatedAt: at(minute),
  },
});

let harness: Harness;
let reports: ReportsFeature;
let http: ReturnType<typeof request>;

const documents = async () =>
  (await harness.services.mongo.collection(ROLLUP_COLLECTION).find({}).toArray())
    .map(({ _id, counts }) => ({ _id, counts }))
    .sort((a, b) => String(a._id).localeCompare(String(b._id)));

beforeAll(async () => {
  harness = await startHarness({ worker: false });
  const { mongo, redis, logger, metrics, outbox } = harness.services;
  reports = createReportsFeature({
    connection: mongo,
    redis,
    logger,
    metrics,
    config: { adminToken: TOKEN, publicBaseUrl: 'http://127.0.0.1', channels: ['whatsapp'], prices: undefined },
    today: () => '2026-11-20',
  });
  const app = express();
  app.use(reports.router);
  http = request(app);
  const writer = createTranscriptWriter({ connection: mongo, outbox, batchSize: 10, logger, metrics, rollup: reports.recordTranscripts });
  await writer.apply([
    message('in:whatsapp:G1', 'inbound', 0),
    // The reply's first part carries its guidance; its second part none.
    message('out:whatsapp:G1#0', 'outbound', 1, { entries: ['tone-warm', 'chargeback.person'], applied: ['chargeback.person'] }),
    message('out:whatsapp:G1#1', 'outbound', 1),
    message('in:whatsapp:G2', 'inbound', 5),
    message('out:whatsapp:G2#0', 'outbound', 6, { entries: ['tone-warm'], applied: [] }),
  ]);
  await reports.store.flush();
}, 60_000);

afterAll(async () => {
  await reports?.close();
  await harness?.close();
});

describe('guidance at work', () => {
  test('per entry: the replies whose prompt quoted it and those it applied to, in the summary, the CSV and the page', async () => {
    const summary = await http.get(`/admin/reports/summary?from=${DAY}&to=${DAY}`).set('Authorization', `Bearer ${TOKEN}`);
    expect(summary.status).toBe(200);
    expect(summary.body.totals.guidance).toEqual({ 'tone-warm': { quoted: 2, applied: 0 }, 'chargeback.person': { quoted: 1, applied: 1 } });
    const csv = await http.get(`/admin/reports/csv/guidance.csv?from=${DAY}&to=${DAY}`).set('Authorization', `Bearer ${TOKEN}`);
    expect(csv.status).toBe(200);
    expect(csv.text.trim().split('\r\n')).toEqual(['guidance entry,replies quoting it,replies it applied to', 'tone-warm,2,0', 'chargeback.person,1,1']);
    const signIn = await http.post('/admin/reports/sign-in').type('form').send({ token: TOKEN });
    const cookie = String(signIn.headers['set-cookie']).split(';')[0] ?? '';
    const page = await http.get(`/admin/reports?from=${DAY}&to=${DAY}`).set('Cookie', cookie);
    expect(page.text).toContain('<h2 id="t-guidance">Guidance at work</h2>');
    expect(page.text).toContain('<tr><th scope="row">chargeback.person</th><td>1</td><td>1</td></tr>');
  });

  test('a rebuild from the stored messages gives the same roll-ups', async () => {
    const live = await documents();
    expect(live.map(({ _id }) => _id)).toEqual([`${DAY}|whatsapp`, `${DAY}|whatsapp~@support`]);
    expect(live[0]?.counts).toMatchObject({ 'gd_q:tone-warm': 2, 'gd_q:chargeback%2Eperson': 1, 'gd_a:chargeback%2Eperson': 1 });
    await reports.rebuild();
    expect(await documents()).toEqual(live);
  });
});
