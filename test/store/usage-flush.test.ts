/**
 * Model usage off the turn's MongoDB path (`usage-store.ts`): a turn counts its model calls in
 * Redis, MongoDB gets the day's absolute totals when they are flushed (here only when
 * `/admin/usage` asks: the periodic flush is an hour away). The totals must be exact after a
 * flush, after repeated flushes, and after the worker that ran the turns was killed (SIGKILL,
 * no goodbye flush) and another took over: never lost, never counted twice.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, expect, jest, test } from '@jest/globals';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { RUN_TS } from '../support/run-ts.js';

// A worker process starting under load (compiling the service from source) may take most of a minute.
jest.setTimeout(120_000);

const ADMIN_TOKEN = 'usage-flush-admin-token-0123456789';
const CUSTOMER = 'whatsapp:+447700906501';
const today = new Date().toISOString().slice(0, 10);

let harness: Harness;
let worker: ChildProcess | undefined;

async function startWorkerProcess(): Promise<ChildProcess> {
  const spawned = spawn(process.execPath, [...RUN_TS, 'test/support/worker-process.ts'], {
    env: { ...process.env, ...harness.env, TEST_QUEUE_PREFIX: harness.queuePrefix, TEST_MODEL_DELAY_MS: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  spawned.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  spawned.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await eventually(() => output.includes('worker-ready'), 45_000);
  return spawned;
}

beforeAll(async () => {
  harness = await startHarness({ worker: false, env: { ADMIN_TOKEN, USAGE_FLUSH_INTERVAL_MS: '3600000' } });
  worker = await startWorkerProcess();
}, 60_000);
afterAll(async () => {
  worker?.kill('SIGKILL');
  await harness.close();
});

async function ask(body: string): Promise<void> {
  const before = harness.twilio.messages.length;
  expect((await harness.sendWhatsapp({ from: CUSTOMER, body })).status).toBe(200);
  await harness.twilio.waitForMessages(before + 1, 20_000);
}

const report = async () => {
  const response = await harness.http.get(`/admin/usage?from=${today}&to=${today}`).set('Authorization', `Bearer ${ADMIN_TOKEN}`);
  expect(response.status).toBe(200);
  return response.body as { total: { calls: number; inputTokens: number; outputTokens: number } };
};
/** Waits until `count` turns' usage waits in Redis for the next flush. */
const recorded = (count: number) =>
  eventually(async () => ((await harness.services.redis.llen(`asst:{usage:${harness.services.mongo.name}}:pending`)) === count ? true : undefined));
const stored = () => harness.services.mongo.collection('model_usage').find({}).toArray();

test('turns write no usage to MongoDB; the flushed totals are exact, again and again, and after a killed worker', async () => {
  // Each turn: two calls (judge, reply) on the deterministic fast model, 10 tokens in and 10 out each.
  await ask('what does the pro plan cost?');
  await ask('and the price per seat?');
  // The turns are answered and their usage recorded (after the reply) — in Redis only.
  await recorded(2);
  expect(await stored()).toEqual([]);

  expect((await report()).total).toEqual({ calls: 4, inputTokens: 40, outputTokens: 40 });
  expect((await report()).total).toEqual({ calls: 4, inputTokens: 40, outputTokens: 40 });
  expect(await stored()).toEqual([{ _id: `${today}|sales|whatsapp|deterministic-fast`, calls: 4, inputTokens: 40, outputTokens: 40 }]);

  // One more turn, then the worker dies without flushing; another takes over and runs one more.
  await ask('is there a yearly price?');
  await recorded(1);
  const exited = new Promise((resolve) => worker?.once('exit', resolve));
  worker?.kill('SIGKILL');
  await exited;
  worker = await startWorkerProcess();
  await ask('and what does the trial cost?');
  await recorded(2);

  expect((await report()).total).toEqual({ calls: 8, inputTokens: 80, outputTokens: 80 });
  expect((await report()).total).toEqual({ calls: 8, inputTokens: 80, outputTokens: 80 });
  expect(await stored()).toEqual([{ _id: `${today}|sales|whatsapp|deterministic-fast`, calls: 8, inputTokens: 80, outputTokens: 80 }]);
}, 90_000);

test('a backlog bigger than one fold (Redis folds a bounded number of entries per script call) is flushed whole, once', async () => {
  const before = (await report()).total;
  const pending = `asst:{usage:${harness.services.mongo.name}}:pending`;
  // 250 turns' usage as the store records it: more than two folds' worth, not a multiple of one.
  const entries = Array.from({ length: 250 }, () => JSON.stringify({ d: today, r: 'support', c: 'whatsapp', m: [['deterministic-fast', 3, 5]] }));
  await harness.services.redis.rpush(pending, ...entries);
  const expected = { calls: before.calls + 250, inputTokens: before.inputTokens + 750, outputTokens: before.outputTokens + 1250 };
  expect((await report()).total).toEqual(expected);
  expect(await harness.services.redis.llen(pending)).toBe(0);
  expect((await report()).total).toEqual(expected);
}, 30_000);

test('a fold sums each day, role, channel and model on its own, and drops an entry no turn would write', async () => {
  await report();
  const pending = `asst:{usage:${harness.services.mongo.name}}:pending`;
  const entry = (r: string, m: [string, number, number][]) => JSON.stringify({ d: today, r, c: 'whatsapp', m });
  await harness.services.redis.rpush(
    pending,
    entry('bookkeeper', [['model-a', 7, 1]]),
    'not json',
    entry('bookkeeper', [
      ['model-a', 2, 3],
      ['model-b', 100, 200],
    ]),
    JSON.stringify({ d: today, r: 'bookkeeper', c: 'whatsapp' }),
    entry('sales', [['model-b', 1, 1]]),
  );
  await report();
  const byId = new Map((await stored()).map((document) => [String(document._id), document]));
  expect(byId.get(`${today}|bookkeeper|whatsapp|model-a`)).toEqual({ _id: `${today}|bookkeeper|whatsapp|model-a`, calls: 2, inputTokens: 9, outputTokens: 4 });
  expect(byId.get(`${today}|bookkeeper|whatsapp|model-b`)).toEqual({
    _id: `${today}|bookkeeper|whatsapp|model-b`,
    calls: 1,
    inputTokens: 100,
    outputTokens: 200,
  });
  expect(byId.get(`${today}|sales|whatsapp|model-b`)).toEqual({ _id: `${today}|sales|whatsapp|model-b`, calls: 1, inputTokens: 1, outputTokens: 1 });
  expect(await harness.services.redis.llen(pending)).toBe(0);
}, 30_000);
