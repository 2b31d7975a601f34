/**
 * A WhatsApp message in, an answer out: the reply that reaches the customer through the
 * twilio library, the transcript in MongoDB, long replies split in order, delivery statuses,
 * the typing indicator and what a model failure looks like to the customer.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import { APOLOGY_TEXT } from '../../src/turn/handle-inbound.js';
import { WHATSAPP_BODY_LIMIT } from '../../channels/whatsapp/split-message.js';
import { eventually, newMessageSid, startHarness, TEST_SENDER, type Harness } from '../support/harness.js';
import { transcriptsWritten, turnsSettled } from '../support/settled.js';

describe('a WhatsApp turn', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness();
  });
  afterAll(() => harness.close());
  beforeEach(() => {
    harness.twilio.reset();
    harness.logs.splice(0);
    harness.models.setScript(({ userText }) => ({ text: `You said: ${userText}` }));
  });

  const conversationOf = async (address: string) => {
    const conversation = await harness.services.transcripts.conversations.findOne({ address }).lean();
    if (!conversation) return [];
    return harness.services.transcripts.conversationMessages(conversation._id);
  };

  test('the customer gets one answer from the sender number, and both messages are kept', async () => {
    const customer = 'whatsapp:+447700900001';
    const messageSid = newMessageSid();
    const response = await harness.sendWhatsapp({ from: customer, body: 'Where is my order?', messageSid, profileName: 'Ana' });
    expect(response.status).toBe(200);

    const [sent] = await harness.twilio.waitForMessages(1);
    expect(sent).toMatchObject({ to: customer, from: TEST_SENDER, body: 'You said: Where is my order?' });
    // Its status callbacks name the part (its ledger key, base64url), in the URL Twilio signs.
    const part = Buffer.from(`out:whatsapp:${messageSid}#0`).toString('base64url');
    expect(sent?.statusCallback).toBe(`https://assistant.example.test/webhooks/whatsapp/status?part=${part}`);

    const messages = await eventually(async () => {
      const found = await conversationOf(customer);
      return found.length === 2 && found[1]?.status === 'queued' ? found : undefined;
    });
    expect(messages.map((message) => [message.direction, message.text, message.channelMessageId])).toEqual([
      ['inbound', 'Where is my order?', messageSid],
      ['outbound', 'You said: Where is my order?', sent?.sid],
    ]);
    expect(messages[1]).toMatchObject({ roleId: 'support', replyTo: messageSid, part: 0 });
    expect(harness.models.replyCalls()).toHaveLength(1);
    // The profile name is the customer's to choose: never in the system prompt, only fenced beside their message.
    expect(harness.models.replyCalls()[0]?.system).not.toContain('"Ana"');
    expect(harness.models.replyCalls()[0]?.userMessages).toEqual([
      '<customer-context>\nWhatsApp profile name: "Ana"\n</customer-context>',
      'Where is my order?',
    ]);
  });

  test('the typing indicator is shown for the inbound message', async () => {
    const messageSid = newMessageSid();
    await harness.sendWhatsapp({ from: 'whatsapp:+447700900002', body: 'hi', messageSid });
    await harness.twilio.waitForMessages(1);
    expect(harness.twilio.typingIndicators).toEqual([expect.objectContaining({ channel: 'whatsapp', messageId: messageSid })]);
  });

  test('a reply over 1,600 characters arrives as several messages, in order, split at sentences', async () => {
    const sentence = 'This sentence is part of a long and careful explanation. ';
    const long = sentence.repeat(70).trim();
    harness.models.setScript(() => ({ text: long }));
    await harness.sendWhatsapp({ from: 'whatsapp:+447700900003', body: 'explain everything' });
    const sent = await harness.twilio.waitForMessages(3);
    await turnsSettled(harness.services);
    expect(harness.twilio.messages.length).toBe(sent.length);
    for (const message of sent) {
      expect(message.body.length).toBeLessThanOrEqual(WHATSAPP_BODY_LIMIT);
      expect(message.body.endsWith('explanation.')).toBe(true);
    }
    expect(sent.map((message) => message.body).join(' ')).toBe(long);
    const order = sent.map((message) => message.receivedAtHrtime);
    expect([...order].sort((a, b) => (a < b ? -1 : 1))).toEqual(order);
  });

  test('a model failure is no reply: logged and counted, the message retried, and the customer gets the real answer once the model is back', async () => {
    let failures = 2;
    harness.models.setScript(() => (failures-- > 0 ? { error: new Error('upstream 500') } : { text: 'The real answer.' }));
    const before = harness.services.metrics.value('model_failures_total');
    const callsBefore = harness.models.replyCalls().length;
    const logsBefore = harness.logs.length;
    await harness.sendWhatsapp({ from: 'whatsapp:+447700900004', body: 'hello?' });
    // Retried after 2 s, then 4 s (MESSAGE_RETRY_BACKOFF_MS doubling).
    const [answer] = await harness.twilio.waitForMessages(1, 20_000);
    expect(answer?.body).toBe('The real answer.');
    await turnsSettled(harness.services);
    expect(harness.twilio.messages).toHaveLength(1);
    expect(harness.services.metrics.value('model_failures_total')).toBe(before + 2);
    // One warn line when the model went out and one when it came back; each failed attempt at debug.
    const logged = harness.logs.slice(logsBefore);
    expect(logged.filter((line) => line.level === 'warn' || line.level === 'error').map((line) => line.event)).toEqual(['model-outage', 'model-recovered']);
    expect(logged.filter((line) => line.event === 'model-failed').map((line) => line.level)).toEqual(['debug', 'debug']);
    expect(harness.models.replyCalls().length - callsBefore).toBe(3);
  }, 30_000);

  test('a send Twilio refuses for good fails the message: the rest is not sent, one apology is; a transient refusal is retried without resending earlier parts', async () => {
    harness.models.setScript(() => ({ text: `${'First part sentence. '.repeat(90)}\n\n${'Second part sentence. '.repeat(20)}`.trim() }));
    harness.twilio.failNext(1, 400, { code: 63016, message: 'Failed to send freeform message because you are outside the allowed window.' });
    const customer = 'whatsapp:+447700900005';
    await harness.sendWhatsapp({ from: customer, body: 'long please' });
    const messages = await eventually(async () => {
      const found = await conversationOf(customer);
      return found.filter((message) => message.direction === 'outbound').every((message) => message.status !== 'pending' && message.status !== 'sending') &&
        found.some((message) => message.text === APOLOGY_TEXT)
        ? found
        : undefined;
    });
    const outbound = messages.filter((message) => message.direction === 'outbound');
    expect(outbound[0]).toMatchObject({ status: 'failed', errorCode: '63016' });
    expect(outbound.slice(1, -1).every((message) => message.status === 'failed')).toBe(true);
    expect(outbound.at(-1)).toMatchObject({ text: APOLOGY_TEXT, status: 'queued' });
    expect(messages.find((message) => message.direction === 'inbound')).toMatchObject({ status: 'failed' });
    expect(harness.twilio.messages.map((message) => message.body)).toEqual([APOLOGY_TEXT]);
    expect(harness.logs).toContainEqual(expect.objectContaining({ event: 'reply-send-failed' }));

    harness.twilio.reset();
    harness.twilio.failNext(1, 503);
    const second = 'whatsapp:+447700900006';
    await harness.sendWhatsapp({ from: second, body: 'long again' });
    const sent = await harness.twilio.waitForMessages(outbound.length - 1, 15_000);
    expect(new Set(sent.map((message) => message.body)).size).toBe(sent.length);
    expect(harness.logs).toContainEqual(expect.objectContaining({ event: 'reply-send-retrying' }));
    expect(harness.models.replyCalls().filter((call) => call.userText === 'long again')).toHaveLength(1);
  });

  test('delivery status callbacks are recorded on the stored message and never regress', async () => {
    const customer = 'whatsapp:+447700900007';
    await harness.sendWhatsapp({ from: customer, body: 'status please' });
    const [sent] = await harness.twilio.waitForMessages(1);
    const sid = sent!.sid;
    const statusOf = async () => (await harness.services.transcripts.messages.findOne({ channelMessageId: sid }).lean())?.status;
    await eventually(async () => (await statusOf()) === 'queued');

    expect((await harness.sendStatus({ messageSid: sid, status: 'sent' })).status).toBe(204);
    await transcriptsWritten(harness.services);
    expect(await statusOf()).toBe('sent');
    expect((await harness.sendStatus({ messageSid: sid, status: 'read' })).status).toBe(204);
    expect((await harness.sendStatus({ messageSid: sid, status: 'delivered' })).status).toBe(204);
    await transcriptsWritten(harness.services);
    expect(await statusOf()).toBe('read');
  });

  test('an undelivered status keeps its error code', async () => {
    const customer = 'whatsapp:+447700900008';
    await harness.sendWhatsapp({ from: customer, body: 'will fail' });
    const [sent] = await harness.twilio.waitForMessages(1);
    await eventually(async () => (await harness.services.transcripts.messages.findOne({ channelMessageId: sent!.sid }).lean())?.status === 'queued');
    await harness.sendStatus({ messageSid: sent!.sid, status: 'undelivered', errorCode: '63024' });
    await transcriptsWritten(harness.services);
    const stored = await harness.services.transcripts.messages.findOne({ channelMessageId: sent!.sid }).lean();
    expect(stored).toMatchObject({ status: 'undelivered', errorCode: '63024' });
    expect(harness.services.metrics.value('delivery_failed_total', { channel: 'whatsapp', code: '63024' })).toBe(1);
  });

  test('status callbacks are signature-checked and validated', async () => {
    const unsigned = await harness.http.post('/webhooks/whatsapp/status').type('form').send({ MessageSid: newMessageSid(), MessageStatus: 'sent' });
    expect(unsigned.status).toBe(403);
    const unknown = await harness.sendStatus({ messageSid: newMessageSid(), status: 'delivered' });
    expect(unknown.status).toBe(204);
    expect(harness.logs).toContainEqual(expect.objectContaining({ event: 'delivery-status-unknown-message' }));
    const bogus = await harness.sendStatus({ messageSid: newMessageSid(), status: 'exploded' });
    expect(bogus.status).toBe(400);
    expect(bogus.body.error).toMatch(/^MessageStatus: /);
  });

  test('history reaches the model from the transcript, oldest first', async () => {
    const customer = 'whatsapp:+447700900009';
    await harness.sendWhatsapp({ from: customer, body: 'first question' });
    await harness.twilio.waitForMessages(1);
    await eventually(async () => (await conversationOf(customer)).length === 2 || undefined);
    await harness.sendWhatsapp({ from: customer, body: 'second question' });
    await harness.twilio.waitForMessages(2);
    const last = harness.models.replyCalls().at(-1)!;
    const texts = last.options.prompt
      .filter((message) => message.role !== 'system')
      .map((message) => (message.content as { type: string; text?: string }[]).map((part) => part.text ?? '').join(''));
    expect(texts).toEqual([
      'first question',
      'You said: first question',
      '<customer-context>\nWhatsApp profile name: "Test Customer"\n</customer-context>',
      'second question',
    ]);
  });
});

describe('health', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness({ worker: false });
  });
  afterAll(() => harness.close());

  test('/healthz answers while alive and /readyz checks Redis and MongoDB', async () => {
    expect((await harness.http.get('/healthz')).body).toEqual({ status: 'ok' });
    const ready = await harness.http.get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ready', checks: { redis: 'ok', mongodb: 'ok' } });
    harness.services.beginShutdown();
    expect((await harness.http.get('/readyz')).status).toBe(503);
  });
});
