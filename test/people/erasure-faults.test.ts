/**
 * An erasure under faults and races: `npm run people -- erase` killed while it waits on the
 * person's conversation (recorded, not finished) is finished by the service's worker once its
 * lease lapses; a turn in flight when the erasure starts finishes first and its words are erased
 * with the rest (nothing written back afterwards).
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { RUN_TS } from '../support/run-ts.js';
import { admin, assistant, peopleEnv, person, scanStores, transcriptsWritten, turnsSettled } from './life.js';
import type { Script } from '../support/deterministic-model.js';

let releaseSlow: () => void = () => undefined;
const slowGate = new Promise<void>((resolve) => {
  releaseSlow = resolve;
});
/** A turn on "slow" waits for the test before it answers. */
const script: Script = async (call) => {
  if (/slow/i.test(call.userText) && !call.structured) await slowGate;
  return assistant(call);
};

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness({ script, env: peopleEnv() });
});
afterAll(async () => {
  releaseSlow();
  await harness.close();
});

const erasures = async () =>
  (await harness.services.mongo.collection('erasures').find({}).toArray()) as unknown as {
    _id: string;
    status: string;
    counts: Record<string, Record<string, number>>;
  }[];

test('an erasure killed mid-way is finished by a worker', async () => {
  const kim = person('kim', '15201');
  kim.texts.push('Kim would like the green lamp');
  await harness.sendWhatsapp({ from: kim.address, body: kim.texts[0]!, profileName: kim.name });
  await eventually(() => harness.twilio.messages.some((message) => message.to === kim.address) || undefined, 20_000);
  await turnsSettled(harness.services);
  await transcriptsWritten(harness.services);

  // The conversation is busy (its lock held), so the command waits there, recorded, when it is killed.
  const lock = `asst:lock:{${kim.address}}`;
  await harness.services.redis.set(lock, 'held-by-the-test', 'PX', 60_000);
  const child = spawn(process.execPath, [...RUN_TS, 'scripts/people.ts', 'erase', kim.address], { env: { ...process.env, ...harness.env }, stdio: 'ignore' });
  const recorded = await eventually(async () => (await erasures()).find((record) => record.status === 'running'), 30_000);
  child.kill('SIGKILL');
  await new Promise((resolve) => child.once('exit', resolve));
  expect((await erasures()).find((record) => record._id === recorded._id)?.status).toBe('running');
  await harness.services.redis.del(lock);

  const done = await eventually(async () => (await erasures()).find((record) => record._id === recorded._id && record.status === 'done'), 40_000);
  expect(done.counts.mongo).toMatchObject({ conversations: 1, messages: expect.any(Number) });
  expect(harness.logs.some((line) => line.event === 'erasure-resumed' && line.erasure === recorded._id)).toBe(true);
  expect(await scanStores(harness, [kim.number, kim.name, ...kim.texts])).toEqual([]);
}, 90_000);

test('a turn in flight when the erasure starts writes nothing back', async () => {
  const zed = person('zed', '15202');
  zed.texts.push('A slow question from Zed about the red chair');
  await harness.sendWhatsapp({ from: zed.address, body: zed.texts[0]!, profileName: zed.name });
  await eventually(() => harness.models.calls.some((call) => !call.structured && call.userText.includes('red chair')) || undefined, 20_000);

  const erased = admin(harness).post(`/admin/people/${encodeURIComponent(zed.address)}/erase`);
  const pending = erased.then((response) => response);
  await eventually(async () => (await erasures()).some((record) => record.status === 'running') || undefined, 20_000);
  releaseSlow();
  const response = await pending;
  expect(response.status).toBe(200);
  // The reply went out before the erasure went on; nothing of it stays.
  expect(harness.twilio.messages.some((message) => message.to === zed.address && message.body.includes('red chair'))).toBe(true);
  await turnsSettled(harness.services);
  await transcriptsWritten(harness.services);
  expect(await scanStores(harness, [zed.number, zed.name, ...zed.texts])).toEqual([]);
}, 60_000);
