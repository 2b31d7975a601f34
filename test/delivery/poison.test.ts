/**
 * A message whose turn kills the worker running it (a fault hook aborts the process, as a fatal
 * bug or running out of memory would) is never retried into a crash loop: the first death makes
 * the next attempt a guarded one, run as the suspect turn alone in its worker; a death there
 * quarantines it — the customer gets one apology, the message is recorded failed as `poison`,
 * `inbound_failed_total{reason="poison"}` counts it — and every other conversation is answered
 * throughout. A death beside other turns is no evidence against any of them: a customer whose
 * turn happened to run beside a crashing message (an attacker's, sent again and again) is answered.
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

const poisonCalls = (worker: WorkerProcess) =>
  worker
    .output()
    .split('\n')
    .filter((line) => line.startsWith('model-called') && line.includes('POISON')).length;

/** A harness without a worker of its own; `start` spawns a worker process whose model aborts on POISON (other replies take `modelDelayMs`). */
async function poisonRig(modelDelayMs: number) {
  const h = await startHarness({
    worker: false,
    env: { TURN_LOCK_TTL_MS: '1500', MESSAGE_RETRY_BACKOFF_MS: '200' },
    script: ({ userText }) => ({ text: `Answer to: ${userText}` }),
  });
  harness = h;
  const start = async () => {
    const worker = await startWorkerProcess(h.env, h.queuePrefix, modelDelayMs, { TEST_SCRIPT: 'poison' });
    children.push(worker);
    return worker;
  };
  const received = (customer: string) => h.twilio.messages.filter((message) => message.to === customer).map((message) => message.body);
  return { h, start, received };
}

describe('a message that kills every worker that answers it', () => {
  test('is quarantined after its death alone: one apology, recorded failed as poison, other customers answered', async () => {
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
    // run alone in its worker as the suspect turn, which dies too.
    const next = await start();
    await eventually(() => poisonCalls(next) === 1 || undefined, 30_000);
    await next.exited;

    // The next finds a death alone: quarantined without calling the model again.
    await h.services.startWorker().waitUntilReady();
    await eventually(() => received(victim).length > 0 || undefined, 20_000);
    expect((await h.sendWhatsapp({ from: bystander, body: 'and on Sunday?' })).status).toBe(200);
    await eventually(() => received(bystander).length > 1 || undefined, 20_000);

    expect(received(victim)).toEqual([APOLOGY_TEXT]);
    expect(received(bystander)).toEqual(['Slow answer to: what are your hours', 'Answer to: and on Sunday?']);
    expect(h.models.replyCalls().filter((call) => call.userText.includes('POISON'))).toHaveLength(0);
    expect(h.services.metrics.value('inbound_failed_total', { channel: 'whatsapp', reason: 'poison' })).toBe(1);
    expect(h.logs).toContainEqual(
      expect.objectContaining({ event: 'turn-worker-died', crashes: 2, alone: 1, conversationKey: h.logId(conversationKeyFor(victim)) }),
    );
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
  test('is answered, not quarantined: a batch a worker died in runs its next attempt alone, and only when no other such batch is running', async () => {
    // The bystander's model call takes 3 s: it is still running when the poison message kills the worker.
    const { h, start, received } = await poisonRig(3_000);
    const victim = 'whatsapp:+447700960011';
    const bystander = 'whatsapp:+447700960012';

    const first = await start();
    expect((await h.sendWhatsapp({ from: bystander, body: 'what are your hours' })).status).toBe(200);
    await eventually(() => first.output().includes('model-called what are your hours') || undefined, 20_000);
    expect((await h.sendWhatsapp({ from: victim, body: 'POISON please' })).status).toBe(200);
    await first.exited;

    // Both batches had a worker die in them. The next worker takes them up one at a time, alone;
    // the poison kills it once more (the bystander is answered before, or after).
    const next = await start();
    await eventually(() => poisonCalls(next) === 1 || undefined, 30_000);
    await next.exited;

    await h.services.startWorker().waitUntilReady();
    await eventually(() => (received(victim).length > 0 && received(bystander).length > 0) || undefined, 30_000);
    expect(received(victim)).toEqual([APOLOGY_TEXT]);
    // Answered by a worker before the poison ran there, or by the last: never given up on.
    expect(received(bystander)).toHaveLength(1);
    expect(received(bystander)[0]).toMatch(/^(Slow answer|Answer) to: what are your hours$/);
    expect(h.services.metrics.value('inbound_failed_total', { channel: 'whatsapp', reason: 'poison' })).toBe(1);
  }, 150_000);
});

describe('an attacker sending fresh crashing messages while a retried turn is proven', () => {
  test('the retried turn runs alone in its worker: the fresh message waits, and the victim is answered, not quarantined', async () => {
    // Every reply takes 3 s: the victim's retried turn is still running when the fresh poison arrives.
    const { h, start, received } = await poisonRig(3_000);
    const victim = 'whatsapp:+447700960021';
    const attacker = 'whatsapp:+447700960022';

    // The victim's first turn dies with its worker (an OS kill): one death, not alone.
    const first = await start();
    expect((await h.sendWhatsapp({ from: victim, body: 'where is my parcel?' })).status).toBe(200);
    await eventually(() => first.output().includes('model-called where is my parcel?') || undefined, 20_000);
    first.process.kill('SIGKILL');
    await first.exited;

    // The next worker runs it again as the suspect; meanwhile a fresh crashing message comes in from a new number.
    const second = await start();
    await eventually(() => second.output().includes('model-called where is my parcel?') || undefined, 30_000);
    expect((await h.sendWhatsapp({ from: attacker, body: 'POISON again' })).status).toBe(200);
    // The suspect finishes alone, then the poison kills the worker.
    await second.exited;
    expect(poisonCalls(second)).toBe(1);

    await h.services.startWorker().waitUntilReady();
    await eventually(() => received(victim).length > 0 || undefined, 30_000);
    expect(received(victim)).toEqual(['Slow answer to: where is my parcel?']);
    expect(h.services.metrics.value('inbound_failed_total', { channel: 'whatsapp', reason: 'poison' })).toBe(0);
  }, 150_000);
});
