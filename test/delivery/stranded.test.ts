/**
 * Messages that ride on another message's job: appended while their conversation's lock is held
 * or a job of it is queued, they add no job of their own. When the job they ride on fails for
 * good (here: its turn loses the conversation lock on every attempt, so every attempt throws and
 * BullMQ's attempts run out), they must not be stranded: the message whose turn kept failing is
 * given up on visibly (one apology), and the messages behind it are answered, once, in order.
 * Nor when the job fails for good outside any turn (its bookkeeping failing: it gives up on
 * nothing, the head counts an unknown failure and a fresh job answers on).
 * Nor when the rescue that gives up on it loses the conversation's lock on the way (a fresh job
 * finishes the give-up: one apology, the rest answered).
 * Nor when the job a message was to add fails to be added (its sender was answered 200: the message
 * is in its inbox and noted) while another message appended meanwhile rides on it.
 * Nor when the worker's event loop stalls mid-turn past the lock's fence (a GC pause, a starved
 * CPU): the turn is cut short, and its job's retry must find the lock free, not the key the
 * stalled holder left behind.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { redisKeys } from '../../src/queue/keys.js';
import { APOLOGY_PART, inboundMessageId, outboundMessageId } from '../../src/store/transcript-store.js';
import { APOLOGY_TEXT } from '../../src/turn/handle-inbound.js';
import type { ScriptedCall } from '../support/deterministic-model.js';
import { eventually, logsAbout, newMessageSid, startHarness, type Harness } from '../support/harness.js';
import { transcriptsWritten } from '../support/settled.js';
import { stallEventLoop } from '../support/stall.js';

const customer = 'whatsapp:+447700931001';
const unlucky = 'whatsapp:+447700931004';
let harness: Harness;
let poisonCalls = 0;
/** Each poisoned text, and whose conversation it is. */
const poisoned: Record<string, string> = { poison: customer, 'poison again': unlucky };

/** Texts whose first turn stalled the event loop. */
const stalled = new Set<string>();

/**
 * A turn on a poisoned text loses its conversation's lock (the key vanishes) and waits until the
 * worker notices; the first turn on a `stall …` text stalls the event loop past the lock's fence.
 */
async function script(call: ScriptedCall) {
  if (call.userText.startsWith('stall ') && !stalled.has(call.userText)) {
    stalled.add(call.userText);
    // Past the fence (TTL 1.5 s less its 0.3 s margin), often before the key itself expires.
    stallEventLoop(1300);
  }
  const victim = poisoned[call.userText];
  if (victim) {
    if (victim === customer) poisonCalls += 1;
    await harness.services.redis.del(redisKeys.lock(conversationKeyFor(victim)));
    const signal = call.options.abortSignal;
    if (signal && !signal.aborted) await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
  }
  return { text: `Answer to: ${call.userText}` };
}

beforeAll(async () => {
  // One turn per message; a 1.5 s lock (renewed every 0.5 s) and 25 ms doubling retries keep
  // BullMQ's eight attempts at the poisoned job short.
  harness = await startHarness({ script, env: { COALESCE_MS: '0', TURN_LOCK_TTL_MS: '1500', MESSAGE_RETRY_BACKOFF_MS: '25' } });
});
afterAll(() => harness.close());

describe('a message whose turn job fails for good', () => {
  test('is given up on visibly, and the messages that rode on its job are answered once, in order', async () => {
    const poison = newMessageSid();
    const sids = [poison, newMessageSid(), newMessageSid()];
    const bodies = ['poison', 'second', 'third'];
    for (const [index, body] of bodies.entries()) {
      expect((await harness.sendWhatsapp({ from: customer, body, messageSid: sids[index] })).status).toBe(200);
    }
    // BullMQ gives up on the job that carried all three: its eighth attempt failed too.
    await eventually(() => harness.logs.find((line) => line.event === 'turn-job-failed' && line.attempts === 8), 60_000);
    const received = () => harness.twilio.messages.filter((message) => message.to === customer).map((message) => message.body);
    await eventually(
      () => (received().includes('Answer to: third') ? true : undefined),
      20_000,
      () => `received: ${JSON.stringify(received())}\n${logsAbout(harness.logs, '931001')}`,
    );
    expect(received()).toEqual([APOLOGY_TEXT, 'Answer to: second', 'Answer to: third']);
    // Every attempt at it really failed (BullMQ's eight), and the job then failed for good.
    expect(poisonCalls).toBeGreaterThanOrEqual(8);
    expect(harness.logs).toContainEqual(expect.objectContaining({ level: 'error', event: 'inbound-failed', messageId: poison, reason: 'unknown' }));
    await transcriptsWritten(harness.services);
    const messages = harness.services.transcripts.messages;
    expect(await messages.findById(inboundMessageId('whatsapp', poison)).lean()).toMatchObject({ status: 'failed' });
    expect(await messages.findById(outboundMessageId('whatsapp', poison, APOLOGY_PART)).lean()).toMatchObject({ text: APOLOGY_TEXT });
    // Nothing left behind: the inbox is empty and no reply went twice.
    // (The reply reaches Twilio before its batch is acknowledged: wait for the acknowledgement.)
    await eventually(async () => (await harness.services.inbox.size(conversationKeyFor(customer))) === 0, 10_000);
    expect(harness.twilio.messages.filter((message) => message.body === 'Answer to: second')).toHaveLength(1);
  }, 90_000);
});

describe('a rescue that loses the lock while it gives up', () => {
  test('leaves a fresh job: the apology goes once, and the messages behind are answered once, in order', async () => {
    const conversationKey = conversationKeyFor(unlucky);
    const poison = newMessageSid();
    const sids = [poison, newMessageSid(), newMessageSid()];
    // The first create to this customer is the rescue's apology (a poisoned turn never sends).
    const held = harness.twilio.holdNext({ accepted: true, to: unlucky });
    for (const [index, body] of ['poison again', 'fourth', 'fifth'].entries()) {
      expect((await harness.sendWhatsapp({ from: unlucky, body, messageSid: sids[index] })).status).toBe(200);
    }
    const apology = await held;
    // While the apology is with Twilio, the rescue's lock vanishes and its holder notices.
    const lost = () => harness.logs.filter((line) => line.event === 'conversation-lock-lost' && line.conversationKey === harness.logId(conversationKey)).length;
    const lostBefore = lost();
    await harness.services.redis.del(redisKeys.lock(conversationKey));
    await eventually(() => lost() > lostBefore || undefined, 10_000);
    apology.release();
    const received = () => harness.twilio.messages.filter((message) => message.to === unlucky).map((message) => message.body);
    await eventually(
      () => (received().includes('Answer to: fifth') ? true : undefined),
      20_000,
      () => `received: ${JSON.stringify(received())}\n${logsAbout(harness.logs, '931004')}`,
    );
    // (On a loaded machine another holder may be the one that finishes the give-up: the customer gets the same.)
    expect(received()).toEqual([APOLOGY_TEXT, 'Answer to: fourth', 'Answer to: fifth']);
    await transcriptsWritten(harness.services);
    expect(await harness.services.transcripts.messages.findById(inboundMessageId('whatsapp', poison)).lean()).toMatchObject({ status: 'failed' });
    await eventually(async () => (await harness.services.inbox.size(conversationKey)) === 0, 10_000);
  }, 90_000);
});

describe('a job whose add fails while a message rides on it', () => {
  test('is added in the background: both messages are answered, once, in order', async () => {
    const rider = 'whatsapp:+447700931002';
    const [first, second] = [newMessageSid(), newMessageSid()];
    const { queue } = harness.services;
    const add = queue.add.bind(queue);
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    let refused = false;
    // The first message's add waits until the second is appended (riding on it), then fails.
    Object.assign(queue, {
      add: async (...args: Parameters<typeof add>) => {
        if (args[1].messageId !== first || refused) return add(...args);
        refused = true;
        await released;
        throw new Error('Connection is closed.');
      },
    });
    try {
      const firstResponse = Promise.resolve(harness.sendWhatsapp({ from: rider, body: 'first', messageSid: first }));
      await eventually(() => refused || undefined);
      expect((await harness.sendWhatsapp({ from: rider, body: 'second', messageSid: second })).status).toBe(200);
      release();
      expect((await firstResponse).status).toBe(200);
      const received = () => harness.twilio.messages.filter((message) => message.to === rider).map((message) => message.body);
      // The late add comes a second after the refusal, the intake sweeper's job within 15 s at worst.
      await eventually(
        () => (received().includes('Answer to: second') ? true : undefined),
        60_000,
        () => `received: ${JSON.stringify(received())}\n${logsAbout(harness.logs, '931002')}`,
      );
      expect(received()).toEqual(['Answer to: first', 'Answer to: second']);
      expect(harness.logs).toContainEqual(expect.objectContaining({ event: 'turn-enqueued-late', messageId: first }));
    } finally {
      Object.assign(queue, { add });
    }
  }, 90_000);
});

describe('a turn whose worker stalls past the lock’s fence', () => {
  test('is cut short, and its job’s retry answers the message once', async () => {
    // Three customers: the key outlives the fence in most stalls, not all.
    const customers = ['whatsapp:+447700931005', 'whatsapp:+447700931006', 'whatsapp:+447700931007'];
    for (const [index, from] of customers.entries()) {
      const body = `stall ${index + 1}`;
      expect((await harness.sendWhatsapp({ from, body, messageSid: newMessageSid() })).status).toBe(200);
      const received = () => harness.twilio.messages.filter((message) => message.to === from).map((message) => message.body);
      await eventually(
        () => (received().length > 0 ? true : undefined),
        20_000,
        () => logsAbout(harness.logs, harness.logId(from)),
      );
      expect(received()).toEqual([`Answer to: ${body}`]);
    }
    expect(
      harness.logs.filter(
        (line) => line.event === 'conversation-lock-lost' && customers.map((address) => harness.logId(address)).includes(String(line.conversationKey)),
      ),
    ).not.toHaveLength(0);
  }, 90_000);
});

describe('a job that fails for good outside any turn', () => {
  let coalescing: Harness;
  beforeAll(async () => {
    coalescing = await startHarness({ script, env: { COALESCE_MS: '300', TURN_LOCK_TTL_MS: '1500', MESSAGE_RETRY_BACKOFF_MS: '25' } });
  });
  afterAll(() => coalescing.close());

  test('leaves a fresh job: the burst it carried is still answered, in order', async () => {
    const burst = 'whatsapp:+447700931003';
    const sids = [newMessageSid(), newMessageSid(), newMessageSid()];
    const { inbox } = coalescing.services;
    const freeze = inbox.freeze.bind(inbox);
    // Freezing the burst (bookkeeping before its turn) fails on every attempt of the job that carries it.
    Object.assign(inbox, {
      freeze: async (...args: Parameters<typeof freeze>) => {
        if (args[1].entries[0].message.messageId === sids[0]) throw new Error('freeze refused');
        return freeze(...args);
      },
    });
    try {
      for (const [index, body] of ['one', 'two', 'three'].entries()) {
        expect((await coalescing.sendWhatsapp({ from: burst, body, messageSid: sids[index] })).status).toBe(200);
      }
      await eventually(() => coalescing.logs.find((line) => line.event === 'turn-job-failed' && line.attempts === 8), 60_000);
      const received = () => coalescing.twilio.messages.filter((message) => message.to === burst).map((message) => message.body);
      await eventually(() => (received().includes('Answer to: three') ? true : undefined), 20_000);
      // The head, counted as failed once, is retried on its own; the rest follow as one turn.
      expect(received()).toEqual(['Answer to: one', 'Answer to: three']);
      expect(coalescing.logs).toContainEqual(
        expect.objectContaining({ event: 'turn-job-rescued', conversationKey: coalescing.logId(conversationKeyFor(burst)) }),
      );
      // (The reply reaches Twilio before its batch is acknowledged: wait for the acknowledgement.)
      await eventually(async () => (await coalescing.services.inbox.size(conversationKeyFor(burst))) === 0, 10_000);
    } finally {
      Object.assign(inbox, { freeze });
    }
  }, 90_000);
});
