/**
 * Reports from daily roll-ups (src/reports/), on real FerretDB and Redis: transcript records
 * written by the real transcript writer (its `rollup` hook) are counted once, even when a batch
 * is written twice; hand-offs, teammates' first replies, actions' ends and model use land on
 * their day and channel; `rebuild` from what MongoDB holds gives the very same documents;
 * `/admin/reports/summary` and the CSV tables say the same figures; bad input is a 400 with a
 * reason and a log line; the sign-in form sets an HttpOnly, SameSite=Strict cookie.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import express from 'express';
import request from 'supertest';
import { createReportsFeature, type ReportsFeature } from '../../src/reports/index.js';
import { transcriptEvents } from '../../src/reports/rollup-events.js';
import { ROLLUP_COLLECTION } from '../../src/reports/rollup-store.js';
import { createUsageStore } from '../../src/store/usage-store.js';
import type { TranscriptRecord } from '../../src/store/outbox.js';
import { createTranscriptWriter, type TranscriptWriter } from '../../src/store/transcript-writer.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';

const TOKEN = 'reports-admin-token-0123456789abcdef';
const DAY1 = '2026-11-02';
const DAY2 = '2026-11-03';
const TODAY = '2026-11-20';
const at = (day: string, minute: number) => new Date(Date.parse(`${day}T09:00:00Z`) + minute * 60_000).toISOString();

let harness: Harness;
let reports: ReportsFeature;
let writer: TranscriptWriter;
let http: ReturnType<typeof request>;

const message = (id: string, conversationId: string, direction: 'inbound' | 'outbound', createdAt: string, roleId?: string): TranscriptRecord => ({
  kind: 'message',
  message: {
    _id: id,
    conversationId,
    channel: conversationId.split(':')[0] ?? 'whatsapp',
    direction,
    text: `text of ${id}`,
    status: direction === 'inbound' ? 'received' : 'pending',
    ...(roleId ? { roleId } : {}),
    createdAt,
    updatedAt: createdAt,
  },
});

const action = (id: string, state: string, updatedAt: string, reason?: string): TranscriptRecord => ({
  kind: 'action',
  action: { _id: id, conversationId: 'whatsapp:+447700900101', channel: 'whatsapp', state, ...(reason ? { reason } : {}), createdAt: updatedAt, updatedAt },
});

const A = 'whatsapp:+447700900101';
const B = 'whatsapp:+447700900102';
const C = 'web:site:visitor-c';

const firstBatch: TranscriptRecord[] = [
  { kind: 'conversation', _id: A, channel: 'whatsapp', address: '+447700900101', at: at(DAY1, 0) },
  message('in:whatsapp:A1', A, 'inbound', at(DAY1, 0)),
  message('out:whatsapp:A1#0', A, 'outbound', at(DAY1, 1), 'sales'),
  message('in:whatsapp:A2', A, 'inbound', at(DAY1, 2)),
  message('out:whatsapp:A2#0', A, 'outbound', at(DAY1, 3), 'sales'),
  { kind: 'status', _id: 'out:whatsapp:A2#0', status: 'delivered', at: at(DAY1, 4) },
  message('in:whatsapp:B1', B, 'inbound', at(DAY1, 10)),
  message('out:whatsapp:B1#0', B, 'outbound', at(DAY1, 11), 'support'),
  message('in:web:C1', C, 'inbound', at(DAY1, 20)),
  message('out:web:C1#0', C, 'outbound', at(DAY1, 21), 'sales'),
];
const secondBatch: TranscriptRecord[] = [
  // The teammate answers B five minutes after the hand-off (opened at minute 12).
  message('out:whatsapp:B2#0', B, 'outbound', at(DAY1, 17), 'teammate:Ana'),
  { kind: 'status', _id: 'out:whatsapp:B2#0', status: 'sent', channelMessageId: 'SMB2', at: at(DAY1, 17) },
  { kind: 'delivery', _id: 'SMB2', messageId: 'out:whatsapp:B2#0', at: at(DAY1, 17) },
  // C comes back the next day: not resolved on day 1.
  message('in:web:C2', C, 'inbound', at(DAY2, 5)),
  message('out:web:C2#0', C, 'outbound', at(DAY2, 6), 'sales'),
  action('act_run', 'done', at(DAY1, 30)),
  action('act_failed', 'failed', at(DAY1, 31)),
  action('act_no', 'cancelled', at(DAY1, 32), 'declined'),
  action('act_team_no', 'cancelled', at(DAY2, 1), 'declined by Ana'),
  action('act_other', 'cancelled', at(DAY1, 33), 'superseded'),
];
/** The outbox entries the batches came in (two records an entry): each record's mark is its entry's id. */
const ENTRY_TIME = Date.now();
const FIRST_MARKS = firstBatch.map((_, index) => `${ENTRY_TIME}-${Math.floor(index / 2)}`);
const SECOND_MARKS = secondBatch.map((_, index) => `${ENTRY_TIME + 1}-${Math.floor(index / 2)}`);
const handoff = {
  _id: 'ho_reports_b',
  conversationId: B,
  channel: 'whatsapp',
  team: 'support',
  roleId: 'support',
  status: 'taken',
  createdAt: new Date(at(DAY1, 12)),
};

/** The roll-up documents' figures (without the mark of the flush that last added to each). */
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
    config: {
      adminToken: TOKEN,
      publicBaseUrl: 'http://127.0.0.1',
      channels: ['whatsapp', 'web'],
      prices: { 'model-a': { inputPerMTok: 1_000, outputPerMTok: 2_000 } },
    },
    today: () => TODAY,
  });
  writer = createTranscriptWriter({ connection: mongo, outbox, batchSize: 10, logger, metrics, rollup: reports.recordTranscripts });
  const app = express();
  app.use(reports.router);
  http = request(app);

  await writer.apply(firstBatch, FIRST_MARKS);
  // A retried batch (the writer died before acknowledging it) counts nothing twice: its outbox entries were counted.
  await writer.apply(firstBatch, FIRST_MARKS);
  await mongo.collection('handoffs').insertOne(handoff as never);
  const store = reports.recordHandoffs({ open: async () => ({ handoff, created: true }), other: () => 'kept' });
  await store.open();
  expect(store.other()).toBe('kept');
  await writer.apply(secondBatch, SECOND_MARKS);
  // Model use on day 1 (as the usage store keeps it, and as the live hook counts it).
  await mongo.collection('model_usage').insertOne({ _id: `${DAY1}|sales|whatsapp|model-a` as never, calls: 2, inputTokens: 1000, outputTokens: 500 });
  await reports.store.count([
    { id: '', kind: 'usage', day: DAY1, channel: 'whatsapp', role: 'sales', model: 'model-a', calls: 2, inputTokens: 1000, outputTokens: 500 },
  ]);
  await reports.store.flush();
}, 60_000);

afterAll(async () => {
  await reports?.close();
  await harness?.close();
});

const summary = async (query: string) => {
  const response = await http.get(`/admin/reports/summary?${query}`).set('Authorization', `Bearer ${TOKEN}`);
  expect(response.status).toBe(200);
  return response.body;
};

describe('roll-ups', () => {
  test('each day and channel gets its figures, once', async () => {
    const byId = Object.fromEntries((await documents()).map((document) => [document._id, document.counts]));
    expect(byId[`${DAY1}|whatsapp`]).toEqual({
      in: 3,
      out: 4,
      conv: 2,
      unres: 1,
      ho: 1,
      'ho_team:support': 1,
      'ho_role:support': 1,
      'frt:1': 1,
      frt_n: 1,
      // Support has no hours: always open, the same wait.
      'frth:1': 1,
      frth_n: 1,
      // The same reply by the hand-off's team and by the teammate who wrote it.
      'frt_team:support:1': 1,
      'frth_team:support:1': 1,
      'frt_tm:Ana:1': 1,
      'frth_tm:Ana:1': 1,
      act_run: 1,
      act_failed: 1,
      act_declined: 1,
      calls: 2,
      'tok_in:model-a': 1000,
      'tok_out:model-a': 500,
    });
    expect(byId[`${DAY1}|web`]).toEqual({ in: 1, out: 1, conv: 1, unres: 1 });
    expect(byId[`${DAY2}|web`]).toEqual({ in: 1, out: 1, conv: 1 });
    expect(byId[`${DAY2}|whatsapp`]).toEqual({ act_declined: 1 });
  });

  test('a batch is deduplicated by its outbox entries: no message id stays in Redis, and the marks go with the entries', async () => {
    const { redis, mongo } = harness.services;
    const prefix = `asst:{reports:${mongo.name}}`;
    // No set of message ids for the days counted (only conversations' day sets).
    expect(await redis.exists(`${prefix}:seen:${DAY1}`, `${prefix}:seen:${DAY2}`)).toBe(0);
    const marks = `${prefix}:marks:${new Date(ENTRY_TIME).toISOString().slice(0, 10)}`;
    const entries = [...new Set([...FIRST_MARKS, ...SECOND_MARKS])];
    // The batches' entries, and the hand-off counted by its own id (kept a few days).
    expect((await redis.smembers(marks)).sort()).toEqual([...entries, `h:${handoff._id}`].sort());
    // The entries left the outbox: their marks go.
    await reports.releaseTranscripts(entries);
    expect(await redis.smembers(marks)).toEqual([`h:${handoff._id}`]);
  });

  test('a rebuild from MongoDB gives the same documents as the live roll-up', async () => {
    // A day whose messages retention removed keeps its figures.
    await harness.services.mongo.collection(ROLLUP_COLLECTION).insertOne({ _id: '2026-10-01|whatsapp' as never, counts: { conv: 7, in: 9 } });
    const live = await documents();
    const result = await reports.rebuild();
    expect(result).toMatchObject({ messages: 11, handoffs: 1, actions: 4, usage: 1 });
    expect(await documents()).toEqual(live);
    // And again: a rebuild starts from nothing each time.
    await reports.rebuild();
    expect(await documents()).toEqual(live);
    await harness.services.mongo.collection(ROLLUP_COLLECTION).deleteOne({ _id: '2026-10-01|whatsapp' as never });
  });

  test("a question the knowledge had no answer for counts on today's roll-up and in the summary", async () => {
    const day = new Date().toISOString().slice(0, 10);
    // A miss rides in its turn's usage entry (a turn with no model call too) and counts with the fold.
    const { mongo, redis, logger } = harness.services;
    const usage = createUsageStore(mongo, redis, { flushIntervalMs: 60_000, logger, onFold: reports.recordUsage });
    const missed = (calls: { model: string; inputTokens: number; outputTokens: number }[]) =>
      usage.record({
        day,
        roleId: 'support',
        channelId: 'whatsapp',
        calls,
        miss: { at: new Date().toISOString(), role: 'support', question: 'Gold?', channel: 'whatsapp' },
      });
    await missed([]);
    await missed([{ model: 'model-m', inputTokens: 0, outputTokens: 0 }]);
    await usage.flush();
    // A flush with nothing new to fold counts nothing again.
    await usage.flush();
    await eventually(async () => {
      await reports.store.flush();
      const document = await harness.services.mongo.collection(ROLLUP_COLLECTION).findOne({ _id: `${day}|whatsapp` as never });
      return document?.counts.miss === 2 || undefined;
    });
    const figures = await summary(`from=${day}&to=${day}&channel=whatsapp`);
    expect(figures.totals.knowledgeMisses).toBe(2);
    expect(figures.days[0].knowledgeMisses).toBe(2);
    // They are in no collection a rebuild reads: it carries the count over rather than zero it.
    await missed([]);
    await usage.flush();
    await eventually(async () => {
      await reports.store.flush();
      const document = await harness.services.mongo.collection(ROLLUP_COLLECTION).findOne({ _id: `${day}|whatsapp` as never });
      return document?.counts.miss === 3 || undefined;
    });
    await reports.rebuild();
    expect((await summary(`from=${day}&to=${day}&channel=whatsapp`)).totals.knowledgeMisses).toBe(3);
    await harness.services.mongo.collection(ROLLUP_COLLECTION).deleteOne({ _id: `${day}|whatsapp` as never });
    await harness.services.mongo.collection('model_usage').deleteMany({ _id: { $in: [`${day}|support|whatsapp|model-m`] } as never });
  });

  test("turns' metered model calls count on today's roll-up, from the usage store's fold", async () => {
    const day = new Date().toISOString().slice(0, 10);
    const { mongo, redis, logger } = harness.services;
    const usage = createUsageStore(mongo, redis, { flushIntervalMs: 60_000, logger, onFold: reports.recordUsage });
    const turn = (inputTokens: number, outputTokens: number) => ({
      day,
      roleId: 'sales',
      channelId: 'web',
      calls: [{ model: 'model-a', inputTokens, outputTokens }],
    });
    await usage.record(turn(100, 10));
    await usage.record(turn(50, 5));
    await usage.flush();
    await reports.store.flush();
    const document = await harness.services.mongo.collection(ROLLUP_COLLECTION).findOne({ _id: `${day}|web` as never });
    expect(document?.counts).toEqual({ calls: 2, 'tok_in:model-a': 150, 'tok_out:model-a': 15 });
    // A flush with nothing new to fold counts nothing again.
    await usage.flush();
    await reports.store.flush();
    const again = await harness.services.mongo.collection(ROLLUP_COLLECTION).findOne({ _id: `${day}|web` as never });
    expect(again?.counts).toEqual({ calls: 2, 'tok_in:model-a': 150, 'tok_out:model-a': 15 });
    await harness.services.mongo.collection(ROLLUP_COLLECTION).deleteOne({ _id: `${day}|web` as never });
    await harness.services.mongo.collection('model_usage').deleteMany({ _id: { $in: [`${day}|sales|web|model-a`] } as never });
  });

  test('the summary says the same figures as JSON', async () => {
    const body = await summary(`from=${DAY1}&to=${DAY2}&channel=all`);
    expect(body.days).toHaveLength(2);
    expect(body.days[0]).toMatchObject({ day: DAY1, conversations: 3, messagesIn: 4, messagesOut: 5, handoffs: 1, resolvedWithoutPerson: 1, settled: true });
    expect(body.totals).toMatchObject({
      conversations: 4,
      handoffs: 1,
      handoffRate: 0.25,
      handoffsByTeam: { support: 1 },
      resolvedWithoutPersonShare: 0.5,
      actions: { run: 1, declined: 2, failed: 1 },
      model: { calls: 2, inputTokens: 1000, outputTokens: 500, cost: 2, costPerConversation: 0.5 },
    });
    // One reply within (60 s, 300 s]: the median interpolates to the bucket's middle.
    expect(body.totals.teammateFirstResponse).toMatchObject({ replies: 1, medianSeconds: 180 });
    expect(body.csat).toBeNull();
    const web = await summary(`from=${DAY1}&to=${DAY2}&channel=web`);
    expect(web.totals).toMatchObject({ conversations: 2, messagesIn: 2, handoffs: 0, resolvedWithoutPersonShare: 0.5 });
  });

  test('a preset names its days; each figure comes with the previous period of as many days', async () => {
    expect(await summary('preset=last-7-days')).toMatchObject({ from: '2026-11-14', to: TODAY, previous: { from: '2026-11-07', to: '2026-11-13' } });
    expect(await summary('preset=today')).toMatchObject({ from: TODAY, to: TODAY });
    expect(await summary('preset=this-month')).toMatchObject({ from: '2026-11-01', to: TODAY });
    expect(await summary('preset=last-month&from=2026-01-01')).toMatchObject({
      from: '2026-10-01',
      to: '2026-10-31',
      previous: { from: '2026-08-31', to: '2026-09-30' },
    });
    // Day 2 beside day 1.
    const body = await summary(`from=${DAY2}&to=${DAY2}&channel=all`);
    expect(body.totals).toMatchObject({ conversations: 1, messagesIn: 1 });
    expect(body.previous).toMatchObject({ from: DAY1, to: DAY1, totals: { conversations: 3, messagesIn: 4, messagesOut: 5, handoffs: 1 } });
    const bad = await http.get('/admin/reports/summary?preset=yesterday-ish').set('Authorization', `Bearer ${TOKEN}`);
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('preset must be one of today, last-7-days, last-30-days, this-month, last-month');
  });

  test('every table downloads as CSV', async () => {
    const response = await http.get(`/admin/reports/csv/daily.csv?from=${DAY1}&to=${DAY2}&channel=whatsapp`).set('Authorization', `Bearer ${TOKEN}`);
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/csv/);
    expect(response.headers['content-disposition']).toBe(`attachment; filename="daily-whatsapp-${DAY1}-${DAY2}.csv"`);
    const lines = response.text.trim().split('\r\n');
    expect(lines[0]).toMatch(
      /^day,conversations,distinct conversations,messages in,messages out,hand-offs,resolved without a person,resolved by the assistant/,
    );
    expect(lines[1]).toBe(`${DAY1},2,2,3,4,1,1,1,yes,1,1,1,0,2,2.0000,0`);
    for (const table of ['handoffs', 'first-response', 'models']) {
      const one = await http.get(`/admin/reports/csv/${table}.csv?from=${DAY1}&to=${DAY2}`).set('Authorization', `Bearer ${TOKEN}`);
      expect(one.status).toBe(200);
    }
    expect((await http.get(`/admin/reports/csv/daily.csv`)).status).toBe(401);
    expect((await http.get(`/admin/reports/csv/secrets.csv`).set('Authorization', `Bearer ${TOKEN}`)).status).toBe(404);
  });
});

describe('bad input', () => {
  test.each([
    ['from=2026-13-01&to=2026-12-01', /^from must be a date/],
    ['from=yesterday', /^from must be a date/],
    ['from=2025-01-01&to=2026-12-01', /^the range is 700 days; at most 400/],
    ['from=2026-12-02&to=2026-12-01', /^from must not be after to/],
    ['channel=fax', /^channel must be all or one of whatsapp, web/],
  ])('%s is a 400 with its reason and a log line', async (query, reason) => {
    const before = harness.logs.filter((line) => line.event === 'reports-request-rejected').length;
    const response = await http.get(`/admin/reports/summary?${query}`).set('Authorization', `Bearer ${TOKEN}`);
    expect(response.status).toBe(400);
    expect(response.body.error).toMatch(reason);
    const lines = harness.logs.filter((line) => line.event === 'reports-request-rejected');
    expect(lines.length).toBe(before + 1);
    expect(lines.at(-1)).toMatchObject({ status: 400, reason: response.body.error });
  });

  test('a wrong token is refused; no token asks to sign in', async () => {
    expect((await http.get('/admin/reports/summary').set('Authorization', 'Bearer wrong-token-wrong-token-wrong')).status).toBe(401);
    const page = await http.get('/admin/reports?from=2026-11-01');
    expect(page.status).toBe(303);
    expect(page.headers.location).toBe('/admin/reports/sign-in?from=2026-11-01');
  });
});

describe('sign-in', () => {
  test('the form sets an HttpOnly, SameSite=Strict session cookie that opens the page', async () => {
    const wrong = await http.post('/admin/reports/sign-in').type('form').send({ token: 'not-the-token' });
    expect(wrong.status).toBe(401);
    expect(wrong.headers['set-cookie']).toBeUndefined();
    const signIn = await http.post('/admin/reports/sign-in').type('form').send({ token: TOKEN, from: DAY1, to: DAY2 });
    expect(signIn.status).toBe(303);
    expect(signIn.headers.location).toBe(`/admin/reports?from=${DAY1}&to=${DAY2}`);
    const cookie = String(signIn.headers['set-cookie']);
    expect(cookie).toMatch(/^wa_reports=v2\.[\w-]{43}; Path=\/admin\/reports; HttpOnly; SameSite=Strict; Max-Age=43200$/);
    expect(cookie).not.toContain(TOKEN);
    const page = await http.get(`/admin/reports?from=${DAY1}&to=${DAY2}`).set('Cookie', cookie.split(';')[0] ?? '');
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toMatch(/^default-src 'none'; style-src 'sha256-[\w+/=]+'; img-src data:; form-action 'self'/);
    expect(page.text).toContain('<svg');
    expect(page.text).toContain('href="/admin/reports/csv/daily.csv?');
    expect(page.text).not.toContain('<script');
    // A forged cookie is no session.
    const forged = await http.get('/admin/reports').set('Cookie', `wa_reports=v2.${'A'.repeat(43)}`);
    expect(forged.status).toBe(303);
  });
});

describe('while a rebuild runs', () => {
  test('a record both the rebuild and a live writer bring is counted once, whichever counts it first', async () => {
    const day = new Date().toISOString().slice(0, 10);
    const conversation = 'web:site:rebuild-race';
    const records = [message('in:web:race1', conversation, 'inbound', `${day}T10:00:00.000Z`)];
    const { events } = transcriptEvents(records);
    await reports.store.rebuilding(true);
    // The rebuild reads the record from MongoDB (by its id)…
    await reports.store.count(events);
    // …and a live writer's batch brings it too (by its outbox entry), then another record.
    await reports.recordTranscripts(records, [`${Date.now()}-0`]);
    await reports.recordTranscripts([message('in:web:race2', conversation, 'inbound', `${day}T10:05:00.000Z`)], [`${Date.now()}-1`]);
    await reports.store.rebuilding(false);
    await reports.store.flush();
    const document = await harness.services.mongo.collection(ROLLUP_COLLECTION).findOne({ _id: `${day}|web` as never });
    expect(document?.counts).toEqual({ in: 2, conv: 1 });
    await harness.services.mongo.collection(ROLLUP_COLLECTION).deleteOne({ _id: `${day}|web` as never });
  });
});
