/**
 * A worker process SIGKILLed mid-turn, with another worker running: the other worker answers
 * the conversation within 10 s of the kill (the product's promise: a short conversation lock
 * renewed often, BullMQ's job lock and stall check to match), once, and only after the killed
 * worker is gone — never two turns of one conversation at once.
 *
 * A worker process SIGKILLed right after it claimed a reply part, while Twilio holds the send
 * request open (the fake's hold hook makes the moment exact). Whether or not Twilio had
 * accepted that send, the next worker resolves the part — found at Twilio by the Messages
 * list, or sent because it is not there — and the customer gets the answer exactly once. If
 * the lookup itself keeps failing, the part ends failed once the budget is spent, with the apology.
 */
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, test } from '@jest/globals';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { APOLOGY_PART, inboundMessageId, outboundMessageId } from '../../src/store/transcript-store.js';
import { APOLOGY_TEXT } from '../../src/turn/handle-inbound.js';
import { eventually, newMessageSid, startHarness, type Harness } from '../support/harness.js';
import { transcriptsWritten, turnsSettled } from '../support/settled.js';
import { recordFigures } from './burst.js';
import { startWorkerProcess } from '../support/spawn-worker.js';

let child: ChildProcess | undefined;
let harness: Harness | undefined;
afterEach(async () => {
  child?.kill('SIGKILL');
  await harness?.close();
  child = undefined;
  harness = undefined;
});

/** The product's promise: a killed worker's conversation is answered within this long of the kill. */
const RECOVERY_BOUND_MS = 10_000;

describe('a worker killed mid-turn while another worker runs', () => {
  test(`the other worker answers within ${RECOVERY_BOUND_MS / 1000} s of the kill, once, after the killed one is gone`, async () => {
    const replyCallsAt: number[] = [];
    // The product's defaults (lock TTL, quiet period): an empty variable is unset.
    harness = await startHarness({
      worker: false,
      env: { TURN_LOCK_TTL_MS: '', COALESCE_MS: '' },
      script: ({ userText }) => {
        replyCallsAt.push(Date.now());
        return { text: `Answer to: ${userText}` };
      },
    });
    expect(harness.config.worker.lockTtlMs).toBe(5000);
    // The model call of the worker to be killed never returns.
    const worker = await startWorkerProcess(harness.env, harness.queuePrefix, 600_000);
    child = worker.process;
    const customer = 'whatsapp:+447700911301';
    expect((await harness.sendWhatsapp({ from: customer, body: 'where is my parcel?' })).status).toBe(200);
    await eventually(() => worker.output().includes('model-called where is my parcel?'), 20_000);
    // Another worker is already running when the first dies, as in any deployment of two.
    await harness.services.startWorker().waitUntilReady();

    const exited = new Promise((resolve) => child!.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    const killedAt = Date.now();
    await eventually(() => harness!.twilio.messages.some((message) => message.to === customer) || undefined, 30_000);
    const killToAnswerMs = Date.now() - killedAt;
    await turnsSettled(harness.services);

    expect(harness.twilio.messages.filter((message) => message.to === customer).map((message) => message.body)).toEqual(['Answer to: where is my parcel?']);
    expect(killToAnswerMs).toBeLessThanOrEqual(RECOVERY_BOUND_MS);
    // One turn at a time: the second worker's turn started only once the first worker was dead.
    expect(replyCallsAt).toHaveLength(1);
    expect(replyCallsAt[0]).toBeGreaterThanOrEqual(killedAt);
    await transcriptsWritten(harness.services);
    const conversation = await harness.services.transcripts.conversationMessages(conversationKeyFor(customer));
    expect(conversation.map((message) => [message.direction, message.status])).toEqual([
      ['inbound', 'received'],
      ['outbound', 'queued'],
    ]);
    await recordFigures('killed-mid-turn', { killToAnswerMs, boundMs: RECOVERY_BOUND_MS, lockTtlMs: harness.config.worker.lockTtlMs });
  }, 90_000);
});

/** `promise`, or a failure naming the step that did not happen in `ms` (a hang says where it is). */
async function within<T>(promise: Promise<T>, ms: number, step: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not within ${ms} ms: ${step}`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe.each([
  ['had accepted it', true, 'found'],
  ['had not accepted it', false, 'resent'],
])('a worker killed right after claiming the send (Twilio %s)', (label, accepted, outcome) => {
  test('the customer is answered exactly once, and the conversation goes on', async () => {
    harness = await startHarness({ worker: false, env: { MESSAGE_RETRY_BACKOFF_MS: '250' }, script: ({ userText }) => ({ text: `Answer to: ${userText}` }) });
    const worker = await within(startWorkerProcess(harness.env, harness.queuePrefix), 30_000, 'the worker process started');
    child = worker.process;
    const customer = accepted ? 'whatsapp:+447700906301' : 'whatsapp:+447700903002';
    const messageSid = newMessageSid();
    const held = harness.twilio.holdNext({ accepted });
    expect((await harness.sendWhatsapp({ from: customer, body: 'where is my order?', messageSid })).status).toBe(200);
    const request = await within(held, 20_000, "the reply's send reached Twilio");
    expect(request.params.Body).toBe('Slow answer to: where is my order?');
    const partId = outboundMessageId('whatsapp', messageSid, 0);
    // The send ledger is in Redis: the claim is there before anything reaches MongoDB.
    expect((await harness.services.transcripts.message(partId))?.status).toBe('sending');

    const exited = new Promise((resolve) => child!.once('exit', resolve));
    child.kill('SIGKILL');
    await within(exited, 10_000, 'the killed worker exited');
    const killedAt = Date.now();
    request.release();

    await within(harness.services.startWorker().waitUntilReady(), 20_000, 'the second worker was ready');
    const part = await eventually(async () => {
      const stored = await harness!.services.transcripts.message(partId);
      return stored?.status === 'queued' ? stored : undefined;
    }, 20_000);
    const resolvedAt = Date.now();
    await harness.sendWhatsapp({ from: customer, body: 'thanks!' });
    await eventually(() => harness!.twilio.messages.some((message) => message.body === 'Answer to: thanks!') || undefined, 15_000);

    const received = harness.twilio.messages.filter((message) => message.to === customer);
    expect(received.map((message) => message.body)).toEqual(['Slow answer to: where is my order?', 'Answer to: thanks!']);
    expect(part.channelMessageId).toBe(received[0]!.sid);
    expect(harness.logs).toContainEqual(expect.objectContaining({ event: 'reply-part-resolved', outcome }));
    // Twilio has the second answer; its ledger entry is marked right after, MongoDB's behind it.
    await transcriptsWritten(harness.services);
    const conversation = await eventually(async () => {
      const messages = await harness!.services.transcripts.conversationMessages(conversationKeyFor(customer));
      return messages.every((message) => message.status !== 'sending') ? messages : undefined;
    });
    expect(conversation.map((message) => [message.direction, message.status])).toEqual([
      ['inbound', 'received'],
      ['outbound', 'queued'],
      ['inbound', 'received'],
      ['outbound', 'queued'],
    ]);
    await recordFigures(`killed-after-claim-${accepted ? 'accepted' : 'not-accepted'}`, {
      variant: `Twilio ${label}`,
      lost: received.some((message) => message.body === 'Slow answer to: where is my order?') ? 0 : 1,
      duplicated: received.length - new Set(received.map((message) => message.body)).size,
      resolution: outcome,
      recoverMs: resolvedAt - killedAt,
    });
  }, 120_000);
});

describe("a worker killed mid-send of a burst's reply", () => {
  test('the next worker resumes that reply for exactly that burst; a message sent meanwhile gets its own turn', async () => {
    harness = await startHarness({ worker: false, env: { COALESCE_MS: '1000' }, script: ({ userText }) => ({ text: `Answer to: ${userText}` }) });
    const worker = await startWorkerProcess(harness.env, harness.queuePrefix);
    child = worker.process;
    const customer = 'whatsapp:+447700911302';
    const held = harness.twilio.holdNext({ accepted: true });
    const sids: string[] = [];
    for (const body of ['hello', 'one question', 'about my order']) {
      const messageSid = newMessageSid();
      await harness.sendWhatsapp({ from: customer, body, messageSid });
      sids.push(messageSid);
    }
    const request = await held;
    expect(request.params.Body).toBe('Slow answer to: about my order');
    const exited = new Promise((resolve) => child!.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    request.release();
    // Sent while no worker runs: it must not join the burst whose reply is half-sent.
    const laterSid = newMessageSid();
    await harness.sendWhatsapp({ from: customer, body: 'are you there?', messageSid: laterSid });

    await harness.services.startWorker().waitUntilReady();
    await eventually(() => harness!.twilio.messages.some((message) => message.body === 'Answer to: are you there?') || undefined, 30_000);
    await turnsSettled(harness.services);

    expect(harness.twilio.messages.filter((message) => message.to === customer).map((message) => message.body)).toEqual([
      'Slow answer to: about my order',
      'Answer to: are you there?',
    ]);
    expect(harness.models.replyCalls()).toHaveLength(1);
    await transcriptsWritten(harness.services);
    const stored = await harness.services.transcripts.conversationMessages(conversationKeyFor(customer));
    expect(stored.map((message) => [message._id, message.status])).toEqual([
      ...sids.map((sid) => [inboundMessageId('whatsapp', sid), 'received']),
      [outboundMessageId('whatsapp', sids[2]!, 0), 'queued'],
      [inboundMessageId('whatsapp', laterSid), 'received'],
      [outboundMessageId('whatsapp', laterSid, 0), 'queued'],
    ]);
  }, 90_000);
});

describe('a lost send whose lookup keeps failing', () => {
  test('ends failed with its reason once the budget is spent; the customer gets the apology', async () => {
    harness = await startHarness({
      worker: false,
      env: { MESSAGE_RETRY_BUDGET_MS: '2000', MESSAGE_RETRY_BACKOFF_MS: '100' },
      script: ({ userText }) => ({ text: `Answer to: ${userText}` }),
    });
    const worker = await startWorkerProcess(harness.env, harness.queuePrefix);
    child = worker.process;
    const customer = 'whatsapp:+447700903003';
    const messageSid = newMessageSid();
    const held = harness.twilio.holdNext({ accepted: false });
    await harness.sendWhatsapp({ from: customer, body: 'hello?', messageSid });
    const request = await held;
    const exited = new Promise((resolve) => child!.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    request.release();
    // Twilio's Messages list is down for longer than the message's budget.
    harness.twilio.failDuring(60_000, 503, 'list');

    await harness.services.startWorker().waitUntilReady();
    const transcripts = harness.services.transcripts;
    await eventually(
      async () => (await transcripts.message(outboundMessageId('whatsapp', messageSid, APOLOGY_PART)))?.status === 'queued' || undefined,
      20_000,
    );
    expect(await transcripts.message(outboundMessageId('whatsapp', messageSid, 0))).toMatchObject({
      status: 'failed',
      errorMessage: 'send outcome unknown and could not be resolved',
    });
    await transcriptsWritten(harness.services);
    expect(await transcripts.messages.findById(inboundMessageId('whatsapp', messageSid)).lean()).toMatchObject({ status: 'failed' });
    expect(harness.twilio.messages.filter((message) => message.to === customer).map((message) => message.body)).toEqual([APOLOGY_TEXT]);
    expect(harness.logs).toContainEqual(expect.objectContaining({ level: 'error', event: 'inbound-failed', reason: 'budget' }));
    expect(harness.logs.filter((line) => line.event === 'inbound-retrying').every((line) => line.kind === 'infrastructure')).toBe(true);
  }, 60_000);
});
