/**
 * What a knowledge miss costs in Redis, counted on Redis's MONITOR for this suite's own keys
 * (other suites share the server: its roll-up keys, and the misses list in its own database): the
 * miss rides in its turn's usage entry and the usage fold lists and counts it — one LPUSH of all a
 * fold's questions and one figure per day and channel a fold, not an LPUSH and a HINCRBY per miss.
 * The reports' count and the misses list stay exact: three misses, three listed (the list folds
 * what turns recorded first, so an owner looking right after a miss sees it), three counted.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Redis } from 'ioredis';
import { schemaDefault, type ScriptedCall, type ScriptedReply } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { openMonitor } from '../support/orchestrator-fixture.js';

const ADMIN_TOKEN = 'miss-budget-admin-token-0123456789abcdef';
const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };
const CUSTOMER = 'whatsapp:+447700916101';

/** Every turn needs the business's knowledge, and finds nothing about gold bars. */
function judge(call: ScriptedCall): ScriptedReply {
  const json = schemaDefault(call.schema) as Record<string, unknown>;
  json.route = 'support';
  json.inScope = true;
  if ('knowledge' in json) json.knowledge = { needed: true, terms: 'gold bars' };
  return { text: JSON.stringify(json) };
}

let harness: Harness;
let monitor: Redis | undefined;
beforeAll(async () => {
  // Folds only when asked (the usage report flushes first), so the count below is one fold's.
  harness = await startHarness({ env: { ADMIN_TOKEN, USAGE_FLUSH_INTERVAL_MS: '3600000' } });
  harness.models.setJudge(judge);
  const added = await harness.http
    .post('/admin/knowledge/faq')
    .set(admin)
    .send({ entries: [{ question: 'How long does delivery take?', answer: 'Standard delivery takes 2 to 3 business days.' }] });
  expect(added.status).toBe(201);
  await eventually(async () => {
    const overview = await harness.http.get('/admin/knowledge').set(admin);
    return (overview.body as { index: { chunks: number } }).index.chunks >= 1 || undefined;
  });
}, 30_000);
afterAll(async () => {
  monitor?.disconnect();
  await harness?.close();
});

describe('a knowledge miss in Redis', () => {
  test('three misses: listed by one LPUSH and counted three in the reports by one figure of one fold, no command per miss', async () => {
    const database = new URL(harness.env.MONGODB_URI!).pathname.slice(1);
    const redisDb = Number(new URL(harness.env.REDIS_URL!).pathname.slice(1) || 0);
    monitor = await openMonitor(process.env.TEST_REDIS_URL!);
    const counted: string[][] = [];
    const onList: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[], _source: string, db: string) => {
      const [name = '', ...rest] = args;
      if (rest[0]?.includes(`{reports:${database}}`) && rest.some((arg) => arg.endsWith('|miss'))) counted.push([name.toLowerCase(), ...rest.slice(1)]);
      if (rest[0] === 'asst:knowledge:misses' && Number(db) === redisDb) onList.push([name.toLowerCase(), ...rest.slice(1)]);
    });
    const bodies = ['Do you sell gold bars?', 'Gold bars by the kilo?', 'And silver?'];
    for (const [index, body] of bodies.entries()) {
      await harness.sendWhatsapp({ from: CUSTOMER, body });
      await eventually(() => harness.twilio.messages.filter((message) => message.to === CUSTOMER).length > index || undefined);
    }
    const listed = async () => {
      const response = await harness.http.get('/admin/knowledge/misses').set(admin);
      return (response.body as { misses: { question: string }[] }).misses.filter((miss) => bodies.includes(miss.question));
    };
    // Each turn's finish has recorded its usage entry (the miss in it); nothing folded them yet (the timer is an hour).
    const pending = `asst:{usage:${database}}:pending`;
    await eventually(async () => (await harness.services.redis.llen(pending)) >= 3 || undefined);
    // The owner looks: the list folds what turns recorded first, and shows all three at once.
    expect((await listed()).map((miss) => miss.question)).toEqual([...bodies].reverse());
    // One LPUSH listed the three (and nothing trimmed a list this short): no command per miss.
    const pushes = onList.filter(([name]) => name !== 'lrange');
    expect(pushes.map(([name]) => name)).toEqual(['lpush']);
    expect(pushes[0]?.slice(1).map((entry) => (JSON.parse(entry) as { question: string }).question)).toEqual(bodies);
    // The usage report folds what turns recorded: the misses with their model use.
    expect((await harness.http.get('/admin/usage').set(admin)).status).toBe(200);
    const day = new Date().toISOString().slice(0, 10);
    // The report flushes its roll-up first.
    const report = await harness.http.get(`/admin/reports/summary?from=${day}&to=${day}&channel=whatsapp`).set(admin);
    expect(report.status).toBe(200);
    expect((report.body as { totals: { knowledgeMisses: number } }).totals.knowledgeMisses).toBe(3);
    // One figure for the three (the fold's script adds 3 at once), none per miss.
    expect(counted.filter(([name]) => name === 'hincrby').map(([, field, amount]) => [field, amount])).toEqual([[`${day}|whatsapp|miss`, '3']]);
    expect((await listed()).length).toBe(3);
  }, 60_000);

  test('an entry the previous version recorded (the miss listed at its turn, only its time in the entry) counts in the reports and lists nothing again', async () => {
    const database = new URL(harness.env.MONGODB_URI!).pathname.slice(1);
    const day = new Date().toISOString().slice(0, 10);
    const before = await harness.http.get('/admin/knowledge/misses').set(admin);
    const entry = { d: day, r: 'support', c: 'whatsapp', m: [['model-x', 10, 2]], k: new Date().toISOString() };
    await harness.services.redis.rpush(`asst:{usage:${database}}:pending`, JSON.stringify(entry));
    // The owner looks: the fold takes the entry, and lists nothing for it.
    const after = await harness.http.get('/admin/knowledge/misses').set(admin);
    expect(after.body).toEqual(before.body);
    expect(await harness.services.redis.llen(`asst:{usage:${database}}:pending`)).toBe(0);
    const report = await harness.http.get(`/admin/reports/summary?from=${day}&to=${day}&channel=whatsapp`).set(admin);
    expect((report.body as { totals: { knowledgeMisses: number } }).totals.knowledgeMisses).toBe(4);
  });
});
