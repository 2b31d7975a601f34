/**
 * A message whose turn kills the worker running it (a fault hook aborts the process, as a fatal
 * bug or running out of memory would) is never retried into a crash loop: the first death makes
 * the next attempt a guarded one, run in a child process of its own; the child's death quarantines
 * it there and then — the customer gets one apology, the message is recorded failed as `poison` —
 * while the worker that forked the child lives on and answers every other conversation. A death of
 * a worker running several turns is no evidence against any of them: a customer whose turn happened
 * to run beside a crashing message, or in a child while its worker was killed, is answered.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { inboundMessageId } from '../../src/store/transcript-store.js';
import { APOLOGY_TEXT } from '../../src/turn/handle-inbound.js';
import { eventually, newMessageSid, startHarness, type Harness } from '../support/harness.js';
import { transcriptsWritten } from '../support/settled.js';
import { startWorkerProcess, type WorkerProcess } from '../support/spawn-worker.js';

let harness: Harness | undefined;
const children: WorkerProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.process.kill('SIGKILL');
  await harness?.close();
  harness = undefined;
});

/** How often the model was asked about a crashing message in a worker process (its suspect children write to the same output). */
const poisonCalls = (worker: WorkerProcess) =>
  worker
    .output()
    .split('\n')
    .filter((line) => line.startsWith('model-called') && line.includes('POISON')).length;

/** The worker process's log lines of `event` (JSON lines on its stderr). */
const logLines = (worker: WorkerProcess, event: string): Record<string, unknown>[] =>
  worker
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{') && line.includes(`"${event}"`))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

/** A harness without a worker of its own; `start` spawns a worker process whose model aborts on POISON (other replies take `modelDelayMs`). */
async function poisonRig(modelDelayMs: number, extra: Record<string, string> = {}) {
  const h = await startHarness({
    worker: false,
    env: { TURN_LOCK_TTL_MS: '1500', MESSAGE_RETRY_BACKOFF_MS: '200' },
    script: ({ userText }) => ({ text: `Answer to: ${userText}` }),
  });
  harness = h;
  const start = async () => {
    const worker = await startWorkerProcess(h.env, h.queuePrefix, modelDelayMs, { TEST_SCRIPT: 'poison', ...extra });
    children.push(worker);
    let exited = false;
    void worker.exited.then(() => (exited = true));
    return Object.assign(worker, { alive: () => !exited });
  };
  const received = (customer: string) => h.twilio.messages.filter((message) => message.to === customer).map((message) => message.body);
  return { h, start, received };
}

describe('a message that kills every worker that answers it', () => {
  test('is quarantined when the child running it alone dies: one apology, recorded failed as poison, the worker lives on', async () => {
    const { h, start, received } = await poisonRig(0);
    const victim = 'whatsapp:+447700960001';
    const bystander = 'whatsapp:+447700960002';

    const first = await start();
    expect((await h.sendWhatsapp({ from: bystander, body: 'what are your hours' })).status).toBe(200);
    await eventually(() => received(bystander).length > 0 || undefined, 20_000);
    const poison = newMessageSid();
    expect((await h.sendWhatsapp({ from: victim, body: 'POISON please', messageSid: poison })).status).toBe(200);
    await first.exited;
    expect(poisonCalls(first)).toBe(1);

    // The next worker finds the batch's turn marked running by a dead worker: a guarded attempt,
    // run in a child of its own, which dies; the worker quarantines it and goes on.
    const next = await start();
    await eventually(() => received(victim).length > 0 || undefined, 60_000);
    expect(poisonCalls(next)).toBe(1);
    expect((await h.sendWhatsapp({ from: bystander, body: 'and on Sunday?' })).status).toBe(200);
    await eventually(() => received(bystander).length > 1 || undefined, 20_000);
    expect(next.alive()).toBe(true);

    expect(received(victim)).toEqual([APOLOGY_TEXT]);
    expect(received(bystander)).toEqual(['Slow answer to: what are your hours', 'Slow answer to: and on Sunday?']);
    expect(h.models.replyCalls().filter((call) => call.userText.includes('POISON'))).toHaveLength(0);
    expect(logLines(next, 'turn-worker-died')).toContainEqual(
      expect.objectContaining({ crashes: 2, alone: 1, conversationKey: h.logId(conversationKeyFor(victim)) }),
    );
    expect(logLines(next, 'suspect-child-died')).toHaveLength(1);
    await transcriptsWritten(h.services);
    expect(await h.services.transcripts.messages.findById(inboundMessageId('whatsapp', poison)).lean()).toMatchObject({
      status: 'failed',
      errorMessage: expect.stringContaining('given up on (poison)'),
    });
    // Nothing of it is left to retry.
    await eventually(async () => (await h.services.inbox.size(conversationKeyFor(victim))) === 0 || undefined, 10_000);
  }, 150_000);
});

describe('a customer whose turn was running beside the poison message', () => {
  test('is answered, not quarantined: each batch a worker died in runs its next attempt in a child of its own', async () => {
    // The bystander's model call takes 3 s: it is still running when the poison message kills the worker.
    const { h, start, received } = await poisonRig(3_000);
    const victim = 'whatsapp:+447700960011';
    const bystander = 'whatsapp:+447700960012';

    const first = await start();
    expect((await h.sendWhatsapp({ from: bystander, body: 'what are your hours' })).status).toBe(200);
    await eventually(() => first.output().includes('model-called what are your hours') || undefined, 20_000);
    expect((await h.sendWhatsapp({ from: victim, body: 'POISON please' })).status).toBe(200);
    await first.exited;

    // Both batches had a worker die in them. The next worker runs each in a child: the poison
    // kills its own, the bystander's is answered.
    const next = await start();
    await eventually(() => (received(victim).length > 0 && received(bystander).length > 0) || undefined, 60_000);
    expect(received(victim)).toEqual([APOLOGY_TEXT]);
    expect(received(bystander)).toEqual(['Slow answer to: what are your hours']);
    expect(poisonCalls(next)).toBe(1);
    expect(next.alive()).toBe(true);
  }, 150_000);
});

describe('a worker that dies while a child of its runs a suspect turn', () => {
  test('is no evidence against that batch: a fresh crashing message kills the worker, the suspect is answered by the next, not quarantined', async () => {
    // Every reply takes 3 s: the victim's retried turn is still running in its child when the fresh poison arrives.
    const { h, start, received } = await poisonRig(3_000);
    const victim = 'whatsapp:+447700960021';
    const attacker = 'whatsapp:+447700960022';

    // The victim's first turn dies with its worker (an OS kill): one death, not alone.
    const first = await start();
    expect((await h.sendWhatsapp({ from: victim, body: 'where is my parcel?' })).status).toBe(200);
    await eventually(() => first.output().includes('model-called where is my parcel?') || undefined, 20_000);
    first.process.kill('SIGKILL');
    await first.exited;

    // The next worker runs it again in a child; meanwhile a fresh crashing message comes in from a
    // new number, runs in the worker itself (no worker died in it yet) and kills it, the child with it.
    const second = await start();
    await eventually(() => second.output().includes('model-called where is my parcel?') || undefined, 60_000);
    expect((await h.sendWhatsapp({ from: attacker, body: 'POISON again' })).status).toBe(200);
    await second.exited;
    expect(received(victim)).toEqual([]);

    // The victim's batch counts a second death, neither alone: the next worker answers it; the attacker's is quarantined.
    const third = await start();
    await eventually(() => (received(victim).length > 0 && received(attacker).length > 0) || undefined, 60_000);
    expect(received(victim)).toEqual(['Slow answer to: where is my parcel?']);
    expect(received(attacker)).toEqual([APOLOGY_TEXT]);
    expect(logLines(third, 'turn-worker-died')).toContainEqual(
      expect.objectContaining({ crashes: 2, alone: 0, conversationKey: h.logId(conversationKeyFor(victim)) }),
    );
    expect(third.alive()).toBe(true);
  }, 150_000);
});

describe('a worker whose suspect child cannot start', () => {
  test('runs the suspect alone in itself instead: a crashing message is still quarantined, never retried for ever', async () => {
    const { h, start, received } = await poisonRig(0, { TEST_CHILD_FAILS: 'on' });
    const victim = 'whatsapp:+447700960031';

    const first = await start();
    expect((await h.sendWhatsapp({ from: victim, body: 'POISON please' })).status).toBe(200);
    await first.exited;

    // The child exits at start: the attempt is retried, alone in the worker, which the poison kills.
    const next = await start();
    await next.exited;
    expect(logLines(next, 'suspect-child-unstarted')).toHaveLength(1);
    expect(poisonCalls(next)).toBe(1);

    // A death alone: the next worker quarantines it without running it.
    const last = await start();
    await eventually(() => received(victim).length > 0 || undefined, 30_000);
    expect(received(victim)).toEqual([APOLOGY_TEXT]);
    expect(poisonCalls(last)).toBe(0);
  }, 150_000);
});

describe('a message whose turn makes the process exit cleanly', () => {
  test('is no crash: its children stopping before they answer are failed attempts, given up on after three, never quarantined', async () => {
    const { h, start, received } = await poisonRig(0);
    const victim = 'whatsapp:+447700960041';
    const quits = (worker: WorkerProcess) =>
      worker
        .output()
        .split('\n')
        .filter((line) => line.startsWith('model-called') && line.includes('QUIT')).length;

    // Its first turn, in the worker itself, ends the worker (a death, not alone).
    const first = await start();
    expect((await h.sendWhatsapp({ from: victim, body: 'QUIT now' })).status).toBe(200);
    await first.exited;

    // Every later attempt runs in a child that exits 0 before it answers: a failed attempt each, and
    // after three the message is given up on as a failure of unknown cause, the worker alive.
    const next = await start();
    await eventually(() => received(victim).length > 0 || undefined, 60_000);
    expect(received(victim)).toEqual([APOLOGY_TEXT]);
    expect(quits(next)).toBe(3);
    expect(logLines(next, 'suspect-child-died')).toHaveLength(0);
    expect(next.alive()).toBe(true);
  }, 150_000);
});
