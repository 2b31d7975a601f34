/**
 * Order and exactly-once under pressure: a burst from several numbers, and a worker process
 * killed in the middle of a turn.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, jest, test } from '@jest/globals';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { transcriptsWritten, turnsSettled } from '../support/settled.js';
import { RUN_TS } from '../support/run-ts.js';

// A worker process starting under load (compiling the service from source) may take most of a minute.
jest.setTimeout(120_000);

describe('a burst from several numbers', () => {
  let harness: Harness;
  const active = new Map<string, number>();
  let maxPerNumber = 0;
  let maxOverall = 0;
  let overall = 0;

  beforeAll(async () => {
    harness = await startHarness({
      script: async ({ userText }) => {
        const number = userText.split(' ')[0]!;
        const now = (active.get(number) ?? 0) + 1;
        active.set(number, now);
        overall += 1;
        maxPerNumber = Math.max(maxPerNumber, now);
        maxOverall = Math.max(maxOverall, overall);
        await new Promise((resolve) => setTimeout(resolve, 15));
        active.set(number, now - 1);
        overall -= 1;
        return { text: `answer to ${userText}` };
      },
    });
  });
  afterAll(() => harness.close());

  test('each number is answered in arrival order, one turn at a time; numbers run concurrently', async () => {
    const numbers = Array.from({ length: 6 }, (_, index) => `+3460000${String(index).padStart(4, '0')}`);
    const perNumber = 5;
    // Messages of one number are sent in order; numbers interleave concurrently.
    await Promise.all(
      numbers.map(async (number) => {
        for (let index = 0; index < perNumber; index += 1) {
          const response = await harness.sendWhatsapp({ from: `whatsapp:${number}`, body: `${number} message ${index}` });
          expect(response.status).toBe(200);
        }
      }),
    );
    const sent = await harness.twilio.waitForMessages(numbers.length * perNumber, 20_000);
    for (const number of numbers) {
      const bodies = sent.filter((message) => message.to === `whatsapp:${number}`).map((message) => message.body);
      expect(bodies).toEqual(Array.from({ length: perNumber }, (_, index) => `answer to ${number} message ${index}`));
    }
    expect(maxPerNumber).toBe(1);
    expect(maxOverall).toBeGreaterThan(1);
  });
});

describe('a worker killed mid-turn', () => {
  let harness: Harness;
  let child: ChildProcess | undefined;
  beforeAll(async () => {
    harness = await startHarness({ worker: false, script: ({ userText }) => ({ text: `Answer to: ${userText}` }) });
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await harness.close();
  });

  test('loses nothing: another worker answers once after the lock expires', async () => {
    child = spawn(process.execPath, [...RUN_TS, 'test/support/worker-process.ts'], {
      env: { ...process.env, ...harness.env, TEST_QUEUE_PREFIX: harness.queuePrefix, TEST_MODEL_DELAY_MS: '60000' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await eventually(() => output.includes('worker-ready'), 45_000);

    const customer = 'whatsapp:+447700900100';
    expect((await harness.sendWhatsapp({ from: customer, body: 'are you there?' })).status).toBe(200);
    await eventually(() => output.includes('model-called are you there?'), 10_000);
    const exited = new Promise((resolve) => child!.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;

    const worker = harness.services.startWorker();
    await worker.waitUntilReady();
    const [reply] = await harness.twilio.waitForMessages(1, 20_000);
    expect(reply).toMatchObject({ to: customer, body: 'Answer to: are you there?' });
    await turnsSettled(harness.services);
    expect(harness.twilio.messages).toHaveLength(1);
    await transcriptsWritten(harness.services);
    const conversation = await harness.services.transcripts.conversations.findOne({ address: customer }).lean();
    const messages = await harness.services.transcripts.conversationMessages(conversation!._id);
    expect(messages.map((message) => message.direction)).toEqual(['inbound', 'outbound']);
  });
});
