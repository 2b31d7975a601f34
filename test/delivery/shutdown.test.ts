/**
 * SIGTERM in the middle of a burst: the stopping worker process finishes the turns it holds,
 * starts no new one, exits 0, and leaves the rest of every inbox (with its jobs) to the next
 * worker — nothing lost, nothing answered twice.
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { startWorkerProcess } from '../support/spawn-worker.js';
import { burstMessages, recordFigures, sendBurst } from './burst.js';

describe('SIGTERM during a burst', () => {
  let harness: Harness;
  let child: ChildProcess | undefined;
  beforeAll(async () => {
    harness = await startHarness({ worker: false, script: ({ userText }) => ({ text: `Answer to: ${userText}` }) });
  });
  afterAll(async () => {
    child?.kill('SIGKILL');
    await harness.close();
  });

  test('no new turn starts after the signal, held turns finish, the next worker answers the rest once', async () => {
    const worker = await startWorkerProcess(harness.env, harness.queuePrefix, 700);
    child = worker.process;

    const burst = burstMessages(4, 4, '5');
    await sendBurst(harness, burst);
    const turnsStarted = () =>
      worker
        .output()
        .split('\n')
        .filter((line) => line.startsWith('model-called ')).length;
    await eventually(() => turnsStarted() >= 6 || undefined, 20_000);
    const exited = new Promise<number | null>((resolve) => child!.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    const signalledAt = Date.now();
    expect(await exited).toBe(0);
    const stoppedAt = Date.now();

    const [before, after = ''] = worker.output().split('shutdown-start\n');
    const started = (text: string) =>
      text
        .split('\n')
        .filter((line) => line.startsWith('model-called '))
        .map((line) => line.slice('model-called '.length));
    const startedAfter = started(after);
    // A turn picked up in the instant before the signal may reach the model just after it:
    // at most one per conversation, never a conversation's next message.
    const perConversation = new Map<string, number>();
    for (const text of startedAfter) perConversation.set(text.slice(0, 4), (perConversation.get(text.slice(0, 4)) ?? 0) + 1);
    expect([...perConversation.values()].every((count) => count <= 1)).toBe(true);
    // Every turn the stopping worker started was finished: its answer went out.
    const startedByChild = [...started(before!), ...startedAfter];
    for (const text of startedByChild) expect(harness.twilio.messages.map((message) => message.body)).toContain(`Slow answer to: ${text}`);

    await harness.services.startWorker().waitUntilReady();
    await eventually(() => harness.twilio.messages.length >= 16 || undefined, 30_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const answered = harness.twilio.messages.map((message) => message.body.replace(/^(Slow answer|Answer) to: /, ''));
    const expected = burst.flat().map((message) => message.body);
    expect([...answered].sort()).toEqual([...expected].sort());
    for (const messages of burst) {
      const order = harness.twilio.messages
        .filter((message) => message.to === messages[0]!.from)
        .map((message) => message.body.replace(/^(Slow answer|Answer) to: /, ''));
      expect(order).toEqual(messages.map((message) => message.body));
    }
    await recordFigures('sigterm-mid-burst', {
      messages: expected.length,
      turnsStartedBeforeSignal: started(before!).length,
      turnsStartedAfterSignal: startedAfter.length,
      answeredByStoppingWorker: startedByChild.length,
      answeredByNextWorker: harness.twilio.messages.length - startedByChild.length,
      lost: expected.filter((body) => !answered.includes(body)).length,
      duplicated: answered.length - new Set(answered).size,
      stopMs: stoppedAt - signalledAt,
    });
  }, 90_000);
});
