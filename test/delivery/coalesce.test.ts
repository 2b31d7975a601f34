/**
 * Burst coalescing, as the customer sees it: messages typed in a burst get one reply that
 * addresses them all, from one turn that saw every one of them; each is still recorded, a
 * duplicate webhook inside the burst is still dropped, a message sent while a turn runs is
 * answered by the next turn once its reply has gone out, and a burst that fails is retried — or
 * given up on — as one. The quiet period is long (3 s) so that a slow machine never splits a burst.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { loadConfig } from '../../src/config.js';
import { APOLOGY_PART, inboundMessageId, outboundMessageId } from '../../src/store/transcript-store.js';
import { APOLOGY_TEXT } from '../../src/turn/handle-inbound.js';
import type { ScriptedCall } from '../support/deterministic-model.js';
import { eventually, newMessageSid, startHarness, testEnv, type Harness } from '../support/harness.js';
import { transcriptsWritten, turnsSettled } from '../support/settled.js';

const COALESCE_ENV = { COALESCE_MS: '3000', MESSAGE_RETRY_BACKOFF_MS: '100', MESSAGE_RETRY_BUDGET_MS: '60000' };

/** Answers the last customer message. */
function script(call: ScriptedCall) {
  return { text: `Answer to: ${call.userText}` };
}

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness({ script, env: COALESCE_ENV });
});
afterAll(() => harness.close());

const received = (customer: string) => harness.twilio.messages.filter((message) => message.to === customer).map((message) => message.body);
const replyCallsWith = (text: string) => harness.models.replyCalls().filter((call) => call.userMessages.includes(text));
const judgeCallsWith = (text: string) => harness.models.calls.filter((call) => call.structured && call.promptText.includes(text));

async function transcript(customer: string) {
  // What the writer has put in MongoDB by now: every record appended so far.
  await transcriptsWritten(harness.services);
  return (await harness.services.transcripts.conversationMessages(conversationKeyFor(customer))).map((message) => ({
    id: message._id,
    direction: message.direction,
    text: message.text,
    status: message.status,
  }));
}

async function sendAll(customer: string, texts: readonly string[]): Promise<string[]> {
  const sids: string[] = [];
  for (const body of texts) {
    const messageSid = newMessageSid();
    expect((await harness.sendWhatsapp({ from: customer, body, messageSid })).status).toBe(200);
    sids.push(messageSid);
  }
  return sids;
}

describe('a three-message burst', () => {
  test('is answered by one turn: one model reply call that saw all three, one reply, three inbound records', async () => {
    const customer = 'whatsapp:+447700911201';
    const texts = ['hi', 'I need', 'my March invoice'];
    const sids = await sendAll(customer, texts);
    await eventually(() => received(customer).length > 0 || undefined, 15_000);
    await turnsSettled(harness.services);

    expect(received(customer)).toEqual(['Answer to: my March invoice']);
    const replies = replyCallsWith('my March invoice');
    expect(replies).toHaveLength(1);
    // The three messages reach the model as its last customer messages, in order (the fenced
    // customer context the channel adds aside).
    expect(replies[0]!.userMessages.filter((text) => !text.startsWith('<customer-context>'))).toEqual(texts);
    // The judge saw all three too (it routed on the invoice: the bookkeeper answered).
    const judged = judgeCallsWith('my March invoice');
    expect(judged).toHaveLength(1);
    for (const text of texts) expect(judged[0]!.promptText).toContain(`Customer: ${text}`);

    // Each message is recorded; the reply is keyed to the last one.
    expect(await transcript(customer)).toEqual([
      ...texts.map((text, index) => ({ id: inboundMessageId('whatsapp', sids[index]!), direction: 'inbound', text, status: 'received' })),
      { id: outboundMessageId('whatsapp', sids[2]!, 0), direction: 'outbound', text: 'Answer to: my March invoice', status: 'queued' },
    ]);
    expect(await harness.services.inbox.size(conversationKeyFor(customer))).toBe(0);
    expect(harness.services.metrics.value('inbound_coalesced_total', { channel: 'whatsapp' })).toBeGreaterThanOrEqual(2);
  }, 30_000);

  test('with a duplicate webhook inside it: the duplicate is dropped, the burst answered once', async () => {
    const customer = 'whatsapp:+447700911202';
    const first = newMessageSid();
    await harness.sendWhatsapp({ from: customer, body: 'hello', messageSid: first });
    await harness.sendWhatsapp({ from: customer, body: 'my plan' });
    // Twilio retries the first webhook.
    expect((await harness.sendWhatsapp({ from: customer, body: 'hello', messageSid: first })).status).toBe(200);
    await harness.sendWhatsapp({ from: customer, body: 'what does it cost' });
    await eventually(() => received(customer).length > 0 || undefined, 15_000);
    await turnsSettled(harness.services);

    expect(received(customer)).toEqual(['Answer to: what does it cost']);
    const replies = replyCallsWith('what does it cost');
    expect(replies).toHaveLength(1);
    expect(replies[0]!.userMessages.filter((text) => text === 'hello')).toHaveLength(1);
    expect((await transcript(customer)).map((message) => [message.direction, message.text])).toEqual([
      ['inbound', 'hello'],
      ['inbound', 'my plan'],
      ['inbound', 'what does it cost'],
      ['outbound', 'Answer to: what does it cost'],
    ]);
  }, 30_000);
});

describe('the quiet period', () => {
  test("a message arriving while the first one's reply is held joins its batch (the held reply is never sent)", async () => {
    const customer = 'whatsapp:+447700911203';
    await sendAll(customer, ['are you open']);
    // The first message's turn ran at once; its reply waits for the quiet period.
    await eventually(() => replyCallsWith('are you open').length > 0 || undefined);
    expect(received(customer)).toEqual([]);
    await sendAll(customer, ['on sunday?']);
    await eventually(() => received(customer).length > 0 || undefined, 15_000);
    await turnsSettled(harness.services);

    expect(received(customer)).toEqual(['Answer to: on sunday?']);
    const replies = replyCallsWith('on sunday?');
    expect(replies).toHaveLength(1);
    expect(replies[0]!.userMessages).toContain('are you open');
    // The first message's own answer was written, held and dropped for the turn that saw both.
    expect(replyCallsWith('are you open')).toHaveLength(2);
  }, 30_000);

  test('a message arriving once the reply has gone out is answered by the next turn: not lost, not answered twice', async () => {
    const customer = 'whatsapp:+447700911204';
    const held = harness.twilio.holdNext({ accepted: true, to: customer });
    const [firstSid = ''] = await sendAll(customer, ['hold on, first question']);
    const secondSid = newMessageSid();
    // The first turn's reply is on its way to the customer: the second message arrives now.
    const create = await held;
    expect((await harness.sendWhatsapp({ from: customer, body: 'second question', messageSid: secondSid })).status).toBe(200);
    create.release();
    await eventually(() => received(customer).length >= 2 || undefined, 20_000);
    await turnsSettled(harness.services);

    expect(received(customer)).toEqual(['Answer to: hold on, first question', 'Answer to: second question']);
    // The first turn never saw the second message; the second saw the first answered before it.
    expect(replyCallsWith('hold on, first question')[0]!.userMessages).not.toContain('second question');
    const second = replyCallsWith('second question');
    expect(second).toHaveLength(1);
    expect(second[0]!.promptText.indexOf('Answer to: hold on, first question')).toBeLessThan(second[0]!.promptText.indexOf('second question'));
    // Each message recorded once, each answered by its own reply (the second arrived before the first reply was stored).
    const stored = (await transcript(customer)).map((message) => [message.id, message.status]);
    expect(stored).toHaveLength(4);
    expect(stored).toEqual(
      expect.arrayContaining([
        [inboundMessageId('whatsapp', firstSid), 'received'],
        [outboundMessageId('whatsapp', firstSid, 0), 'queued'],
        [inboundMessageId('whatsapp', secondSid), 'received'],
        [outboundMessageId('whatsapp', secondSid, 0), 'queued'],
      ]),
    );
  }, 40_000);
});

describe('a burst whose reply fails', () => {
  test('transiently: the batch is retried as one and answered once, keyed to its last message', async () => {
    const customer = 'whatsapp:+447700911205';
    let failing = true;
    harness.twilio.failMatching((body) => failing && body === 'Answer to: retry c', 503);
    const sids = await sendAll(customer, ['retry a', 'retry b', 'retry c']);
    await eventually(() => harness.logs.some((line) => line.event === 'inbound-retrying' && line.messageId === sids[0]) || undefined, 15_000);
    failing = false;
    await eventually(() => received(customer).length > 0 || undefined, 15_000);
    await turnsSettled(harness.services);

    expect(received(customer)).toEqual(['Answer to: retry c']);
    // The stored reply was resumed, not asked for again.
    expect(replyCallsWith('retry c')).toHaveLength(1);
    expect(harness.logs).toContainEqual(expect.objectContaining({ event: 'inbound-retrying', messageId: sids[0], messages: 3 }));
    expect((await transcript(customer)).map((message) => [message.id, message.status])).toEqual([
      ...sids.map((sid) => [inboundMessageId('whatsapp', sid), 'received']),
      [outboundMessageId('whatsapp', sids[2]!, 0), 'queued'],
    ]);
  }, 30_000);

  test('for good: each message is recorded failed and the customer gets one apology', async () => {
    const customer = 'whatsapp:+447700911206';
    harness.twilio.failMatching((body) => body === 'Answer to: refused c', 400);
    const before = harness.services.metrics.value('inbound_failed_total', { channel: 'whatsapp', reason: 'deterministic' });
    const sids = await sendAll(customer, ['refused a', 'refused b', 'refused c']);
    await eventually(
      async () => (await harness.services.transcripts.message(outboundMessageId('whatsapp', sids[2]!, APOLOGY_PART)))?.status === 'queued' || undefined,
      15_000,
    );
    await turnsSettled(harness.services);

    expect(received(customer)).toEqual([APOLOGY_TEXT]);
    const stored = await transcript(customer);
    for (const sid of sids) expect(stored.find((message) => message.id === inboundMessageId('whatsapp', sid))?.status).toBe('failed');
    expect(harness.services.metrics.value('inbound_failed_total', { channel: 'whatsapp', reason: 'deterministic' }) - before).toBe(3);
    const recent = (await harness.services.transcripts.conversations.findById(conversationKeyFor(customer)).lean())?.recent ?? [];
    // None of them stays in the history the model sees.
    for (const sid of sids) expect(recent.map((entry) => entry.id)).not.toContain(inboundMessageId('whatsapp', sid));
  }, 30_000);
});

describe('"reset" inside a burst', () => {
  test('at its start: the old context is gone, "reset" never reaches the model, the messages after it are answered', async () => {
    const customer = 'whatsapp:+447700911210';
    await sendAll(customer, ['my plan is Gold']);
    await eventually(() => received(customer).length > 0 || undefined, 15_000);
    await turnsSettled(harness.services);
    await sendAll(customer, ['reset', 'what are your hours']);
    await eventually(() => received(customer).length > 1 || undefined, 15_000);
    await turnsSettled(harness.services);

    expect(received(customer)).toEqual(['Answer to: my plan is Gold', 'Answer to: what are your hours']);
    const replies = replyCallsWith('what are your hours');
    expect(replies).toHaveLength(1);
    // The new conversation's first message, alone: nothing of the old one, and no "reset".
    expect(replies[0]!.userMessages.filter((text) => !text.startsWith('<customer-context>'))).toEqual(['what are your hours']);
    expect(harness.services.metrics.value('conversation_resets_total', { channel: 'whatsapp' })).toBeGreaterThanOrEqual(1);
    // Both are recorded in the transcript.
    expect((await transcript(customer)).map((message) => message.text)).toEqual([
      'my plan is Gold',
      'Answer to: my plan is Gold',
      'reset',
      'what are your hours',
      'Answer to: what are your hours',
    ]);
  }, 40_000);

  test('at its end: the messages before it stay in the transcript, and the customer is told the conversation starts over', async () => {
    const customer = 'whatsapp:+447700911211';
    // Sent while the worker is paused: both wait in the inbox, one batch whatever the machine's speed.
    await harness.worker!.pause();
    try {
      await sendAll(customer, ['hello, anyone there?', 'reset']);
    } finally {
      harness.worker!.resume();
    }
    await eventually(() => received(customer).length > 0 || undefined, 15_000);
    await turnsSettled(harness.services);
    expect(received(customer)).toEqual([expect.stringContaining('new conversation')]);
    expect(replyCallsWith('hello, anyone there?').filter((call) => call.system.includes(customer.replace('whatsapp:', '')))).toHaveLength(0);
    expect((await transcript(customer)).map((message) => [message.direction, message.text])).toEqual([
      ['inbound', 'hello, anyone there?'],
      ['inbound', 'reset'],
      ['outbound', expect.stringContaining('new conversation')],
    ]);
    // The next message starts from nothing of the old conversation.
    await sendAll(customer, ['do you ship to Spain']);
    await eventually(() => received(customer).length > 1 || undefined, 15_000);
    expect(replyCallsWith('do you ship to Spain')[0]!.userMessages.filter((text) => !text.startsWith('<customer-context>'))).toEqual(['do you ship to Spain']);
  }, 40_000);
});

describe('configuration', () => {
  test('COALESCE_MS defaults to 1500 and is capped; the lock TTL defaults to 5 s', () => {
    const defaults = loadConfig(testEnv('http://127.0.0.1:1', { COALESCE_MS: '', TURN_LOCK_TTL_MS: '' }));
    expect(defaults.worker).toMatchObject({ coalesceMs: 1500, lockTtlMs: 5000 });
    expect(() => loadConfig(testEnv('http://127.0.0.1:1', { COALESCE_MS: '20000', TURN_LOCK_TTL_MS: '500' }))).toThrow(
      'invalid configuration: TURN_LOCK_TTL_MS: expected 1500–60000 ms; COALESCE_MS: expected 0–10000 ms',
    );
  });
});
