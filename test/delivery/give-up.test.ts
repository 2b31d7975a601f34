/**
 * What happens to a message the service can't answer: it is never dropped silently. A reply
 * Twilio refuses for good fails the message at once; a send that keeps failing transiently is
 * retried until the message's own time budget is spent. Either way the customer gets exactly one
 * short apology, the transcript records the message failed (and out of the model's history),
 * an error log and `inbound_failed_total` say so, and the next message is answered. Also: a
 * lone surrogate in a widget message can't jam its conversation.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { redisKeys } from '../../src/queue/keys.js';
import { APOLOGY_TEXT } from '../../src/turn/handle-inbound.js';
import { APOLOGY_PART, inboundMessageId, outboundMessageId } from '../../src/store/transcript-store.js';
import { eventually, newMessageSid, PUBLIC_BASE_URL, startHarness, type Harness } from '../support/harness.js';
import { recordFigures } from './burst.js';

const script = ({ userText }: { userText: string }) => ({ text: `Answer to: ${userText}` });

async function expectGivenUp(harness: Harness, customer: string, messageSid: string, reason: string) {
  const key = conversationKeyFor(customer);
  const transcripts = harness.services.transcripts;
  const apology = await eventually(async () => {
    const stored = await transcripts.messages.findById(outboundMessageId('whatsapp', messageSid, APOLOGY_PART)).lean();
    return stored?.status === 'queued' ? stored : undefined;
  }, 20_000);
  expect(apology.text).toBe(APOLOGY_TEXT);
  expect(await transcripts.messages.findById(inboundMessageId('whatsapp', messageSid)).lean()).toMatchObject({
    status: 'failed',
    errorMessage: expect.stringContaining(`given up on (${reason})`),
  });
  expect(await transcripts.messages.findById(outboundMessageId('whatsapp', messageSid, 0)).lean()).toMatchObject({ status: 'failed' });
  const recent = (await transcripts.conversations.findById(key).lean())?.recent ?? [];
  expect(recent.map((entry) => entry.id)).not.toContain(inboundMessageId('whatsapp', messageSid));
  expect(recent.map((entry) => entry.id)).not.toContain(outboundMessageId('whatsapp', messageSid, 0));
  expect(harness.services.metrics.value('inbound_failed_total', { channel: 'whatsapp', reason })).toBe(1);
  expect(harness.logs).toContainEqual(expect.objectContaining({ level: 'error', event: 'inbound-failed', messageId: messageSid, reason }));
}

describe('a message that fails deterministically (Twilio refuses its reply with a 4xx)', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness({ script });
  });
  afterAll(() => harness.close());

  test('gets one apology, is recorded failed, and later messages are answered', async () => {
    const customer = 'whatsapp:+447700906501';
    harness.twilio.failMatching((body) => body === 'Answer to: poison', 400);
    const messageSid = newMessageSid();
    await harness.sendWhatsapp({ from: customer, body: 'poison', messageSid });
    await harness.sendWhatsapp({ from: customer, body: 'after' });
    await eventually(() => harness.twilio.messages.some((message) => message.body === 'Answer to: after') || undefined, 15_000);
    await expectGivenUp(harness, customer, messageSid, 'deterministic');
    expect(harness.twilio.messages.filter((message) => message.to === customer).map((message) => message.body)).toEqual([APOLOGY_TEXT, 'Answer to: after']);
    // Refused once, not retried: a 4xx will never succeed.
    expect(harness.twilio.requests.filter((request) => request.params.Body === 'Answer to: poison')).toHaveLength(1);
    await recordFigures('deterministic-failure', {
      lost: 0,
      apologies: harness.twilio.messages.filter((message) => message.body === APOLOGY_TEXT).length,
      refusedSends: 1,
      laterMessagesAnswered: 1,
    });
  });
});

describe('a message whose send keeps failing transiently', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness({ script, env: { MESSAGE_RETRY_BUDGET_MS: '2500', MESSAGE_RETRY_BACKOFF_MS: '100' } });
  });
  afterAll(() => harness.close());

  test('is retried until its own budget is spent, then given up on visibly; the conversation goes on', async () => {
    const customer = 'whatsapp:+447700904002';
    harness.twilio.failMatching((body) => body === 'Answer to: stuck', 503);
    const messageSid = newMessageSid();
    await harness.sendWhatsapp({ from: customer, body: 'stuck', messageSid });
    // Queued behind it: these jobs must not use up its attempts (they wait for its re-drive).
    await harness.sendWhatsapp({ from: customer, body: 'second' });
    await harness.sendWhatsapp({ from: customer, body: 'third' });
    await eventually(() => harness.twilio.messages.some((message) => message.body === 'Answer to: third') || undefined, 20_000);
    await expectGivenUp(harness, customer, messageSid, 'budget');
    expect(harness.twilio.messages.filter((message) => message.to === customer).map((message) => message.body)).toEqual([
      APOLOGY_TEXT,
      'Answer to: second',
      'Answer to: third',
    ]);
    const retries = harness.logs.filter((line) => line.event === 'inbound-retrying' && line.messageId === messageSid);
    const given = harness.logs.find((line) => line.event === 'inbound-failed');
    // Every attempt waited for its own backoff: attempt n came after n-1 doubling delays (capped at a tenth of the budget).
    expect(retries.map((line) => line.attempts)).toEqual(retries.map((_, index) => index + 1));
    expect(given).toMatchObject({ reason: 'budget', attempts: retries.length + 1 });
    await recordFigures('budget-spent', {
      budgetMs: 2500,
      attempts: retries.length + 1,
      apologies: harness.twilio.messages.filter((message) => message.body === APOLOGY_TEXT).length,
      laterMessagesAnswered: 2,
    });
  });
});

describe('a lone surrogate in a widget message', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness({ script });
  });
  afterAll(() => harness.close());

  test('is answered, and so is the next message of that conversation', async () => {
    const session = await harness.http.post('/api/widget/session').set('Origin', PUBLIC_BASE_URL).send({ siteKey: 'demo' });
    expect(session.status).toBe(200);
    const { token, conversationId } = session.body as { token: string; conversationId: string };
    const post = (clientMessageId: string, text: string) =>
      harness.http.post('/api/widget/messages').set('Origin', PUBLIC_BASE_URL).set('Authorization', `Bearer ${token}`).send({ clientMessageId, text });
    expect((await post('surrogate-0001', 'broken emoji \ud83d here')).status).toBe(202);
    expect((await post('surrogate-0002', 'and then this')).status).toBe(202);
    const replies = await eventually(async () => {
      const messages = await harness.services.transcripts.conversationMessages(conversationId);
      const sent = messages.filter((message) => message.direction === 'outbound' && message.status === 'delivered');
      return sent.length >= 2 ? messages : undefined;
    }, 15_000);
    const texts = (direction: string) => replies.filter((message) => message.direction === direction).map((message) => message.text);
    // Sanitised where it entered the inbox (String.prototype.toWellFormed).
    expect(texts('inbound')).toEqual(['broken emoji \ufffd here', 'and then this']);
    expect(texts('outbound')).toEqual(['Answer to: broken emoji \ufffd here', 'Answer to: and then this']);
  });
});

describe('a worker that loses the conversation while it gives up on a message', () => {
  let harness: Harness;
  beforeAll(async () => {
    // A 1.5 s lock renewed every 0.5 s; the job's own retry comes after the other holder is done.
    harness = await startHarness({ script, env: { TURN_LOCK_TTL_MS: '1500', MESSAGE_RETRY_BACKOFF_MS: '3000' } });
  });
  afterAll(() => harness.close());

  test('sends no apology while another holds it; the next holder finishes giving up, and the customer gets one apology', async () => {
    const customer = 'whatsapp:+447700906510';
    const key = conversationKeyFor(customer);
    harness.twilio.failMatching((body) => body === 'Answer to: fenced', 400);
    const { transcripts } = harness.services;
    const open = transcripts.openConversation.bind(transcripts);
    let otherHolderUntil = 0;
    // The give-up's first step (it opens the conversation without a turn's records): meanwhile the
    // lock passes to another holder (this worker stalled past its TTL), and the renewal notices.
    Object.assign(transcripts, {
      openConversation: async (...args: Parameters<typeof open>) => {
        if (args[0].key === key && args[1] === undefined && otherHolderUntil === 0) {
          otherHolderUntil = Date.now() + 1500;
          await harness.services.redis.set(redisKeys.lock(key), 'another-holder', 'PX', 1500);
          await new Promise((resolve) => setTimeout(resolve, 700));
        }
        return open(...args);
      },
    });
    try {
      const messageSid = newMessageSid();
      await harness.sendWhatsapp({ from: customer, body: 'fenced', messageSid });
      await expectGivenUp(harness, customer, messageSid, 'deterministic');
      const apologies = harness.twilio.messages.filter((message) => message.to === customer && message.body === APOLOGY_TEXT);
      expect(apologies).toHaveLength(1);
      // Not while the other holder had the conversation.
      expect(apologies[0]!.receivedAt).toBeGreaterThanOrEqual(otherHolderUntil);
      expect(harness.logs).toContainEqual(expect.objectContaining({ event: 'give-up-left-to-next-holder', reason: 'deterministic' }));
      // The refused reply was not retried by the next holder: the decision to give up stood.
      expect(harness.twilio.requests.filter((request) => request.params.Body === 'Answer to: fenced')).toHaveLength(1);
    } finally {
      Object.assign(transcripts, { openConversation: open });
    }
  }, 40_000);
});

describe('a web visitor whose widget speaks Spanish', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness({
      // The model stays down past the message's budget: the holding message, then the apology.
      env: { MODEL_HOLDING_NOTICE_MS: '300', MESSAGE_RETRY_BUDGET_MS: '2500', MESSAGE_RETRY_BACKOFF_MS: '200' },
      script: ({ userText }) => (userText === 'nada' ? { text: '' } : { error: new Error('upstream 503') }),
    });
  });
  afterAll(() => harness.close());

  test("gets the service's own words in Spanish: the holding message, the apology, the answer to an empty reply", async () => {
    const session = await harness.http.post('/api/widget/session').set('Origin', PUBLIC_BASE_URL).send({ siteKey: 'demo' });
    const { token, conversationId } = session.body as { token: string; conversationId: string };
    const post = (clientMessageId: string, text: string) =>
      harness.http
        .post('/api/widget/messages')
        .set('Origin', PUBLIC_BASE_URL)
        .set('Authorization', `Bearer ${token}`)
        .send({ clientMessageId, text, language: 'es' });
    const answers = (count: number) =>
      eventually(async () => {
        const messages = await harness.services.transcripts.conversationMessages(conversationId);
        const sent = messages.filter((message) => message.direction === 'outbound' && message.status === 'delivered').map((message) => message.text);
        return sent.length >= count ? sent : undefined;
      }, 20_000);

    expect((await post('spanish-0001', '¿dónde está mi pedido?')).status).toBe(202);
    expect(await answers(2)).toEqual([
      'Estamos teniendo un problema técnico; le responderemos aquí en breve.',
      // No team to hand it to: an apology that asks nothing.
      'Lo sentimos: algo ha fallado por nuestra parte y no hemos podido responder a su último mensaje. Disculpe la espera.',
    ]);
    expect((await post('spanish-0002', 'nada')).status).toBe(202);
    expect((await answers(3))[2]).toBe('Lo siento, no he podido preparar una respuesta. ¿Podría contarme un poco más sobre lo que necesita?');
  });
});
