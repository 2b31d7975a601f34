/**
 * Coalescing that costs a single message nothing (issue 26): a message's turn starts as soon as
 * it is in its inbox; a message arriving before anything of the turn left starts it over once,
 * with the whole batch, answered by one reply; once a part has gone out, later messages are the
 * next turn; a restart never repeats a tool call, a hand-off notice or a send; the widget's
 * typing report holds a reply and stopping releases it. The quiet period is long (3 s; 10 s on
 * the web, so a typing report outlasts any stall between the test's reports), so a
 * slow machine never splits a burst; the model's calls are held by the test, not timed.
 */
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createEventLog } from '../../channels/web/event-log.js';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { INBOX_NOTICE_CHANNEL } from '../../src/queue/keys.js';
import { duplicateRedis } from '../../src/redis.js';
import type { Script, ScriptedCall } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { handoffsSettled, transcriptsWritten, turnsSettled } from '../support/settled.js';

const QUIET_MS = 3000;
const ANA = 'whatsapp:+34600926001';
const SHOP = 'https://shop.example.test';

/** Rejects when the call is aborted (a turn started over), as a provider's request does. */
const aborted = (call: ScriptedCall) =>
  new Promise<never>((_resolve, reject) => {
    const signal = call.options.abortSignal;
    const fail = () => reject(new DOMException('the call was aborted', 'AbortError'));
    if (signal?.aborted) fail();
    signal?.addEventListener('abort', fail, { once: true });
  });

/** Per test: how reply calls are answered (the default echoes the customer's latest words). */
let reply: Script = (call) => ({ text: `Answer to: ${call.userText}` });

let harness: Harness;
let server: Server;
beforeAll(async () => {
  harness = await startHarness({
    script: (call) => reply(call),
    env: {
      COALESCE_MS: String(QUIET_MS),
      // A widget typing report stands for the web channel's quiet period: long, so a stall of the
      // machine between the test's reports never lets the held reply go early.
      COALESCE_MS_WEB: '10000',
      MESSAGE_RETRY_BACKOFF_MS: '100',
      WEB_SITES: JSON.stringify([{ key: 'test-site', name: 'Harbour Lane', origins: [SHOP] }]),
      HANDOFF_TEAMS: JSON.stringify({ sales: { label: 'Sales team', members: [{ name: 'Ana', whatsapp: ANA }] } }),
      NOTICE_BACKOFF_MS: '20',
    },
  });
  server = harness.services.app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
});
afterAll(async () => {
  server.close();
  await harness.close();
});

const received = (customer: string) => harness.twilio.messages.filter((message) => message.to === customer).map((message) => message.body);
const replyCallsWith = (text: string) => harness.models.replyCalls().filter((call) => call.userMessages.includes(text));
const restarts = (channel = 'whatsapp') => harness.services.metrics.value('turn_restarts_total', { channel });
const say = async (customer: string, body: string) => expect((await harness.sendWhatsapp({ from: customer, body })).status).toBe(200);
const customerTexts = (call: ScriptedCall) => call.userMessages.filter((text) => !text.startsWith('<customer-context>'));

describe('WhatsApp', () => {
  test("a single message's turn starts at once, not after the quiet period; its reply is held until the period has passed", async () => {
    const customer = 'whatsapp:+447700926001';
    let calledAt = 0;
    reply = (call) => {
      calledAt ||= Date.now();
      return { text: `Answer to: ${call.userText}` };
    };
    const sentAt = Date.now();
    await say(customer, 'are you open today');
    await eventually(() => received(customer).length > 0 || undefined, 15_000);
    await turnsSettled(harness.services);

    // The model was asked before the quiet period ended (before, the turn only began then)...
    expect(calledAt).toBeGreaterThan(0);
    expect(calledAt - sentAt).toBeLessThan(QUIET_MS);
    expect(harness.logs.some((line) => line.event === 'turn-coalescing' && line.conversationKey === harness.logId(conversationKeyFor(customer)))).toBe(false);
    // ...and the reply waited for it: a burst could still have grown.
    expect(harness.twilio.messages.find((message) => message.to === customer)!.receivedAt - sentAt).toBeGreaterThanOrEqual(QUIET_MS - 50);
    expect(received(customer)).toEqual(['Answer to: are you open today']);
  }, 30_000);

  test('a burst arriving during the model call starts the turn over once: one reply, from a call that saw every message', async () => {
    const customer = 'whatsapp:+447700926002';
    const restartsBefore = restarts();
    const abortedReplies = () =>
      harness.services.metrics.value('model_calls_aborted_total', { tier: 'fast', purpose: 'reply' }) +
      harness.services.metrics.value('model_calls_aborted_total', { tier: 'smart', purpose: 'reply' });
    const abortedBefore = abortedReplies();
    reply = async (call) => {
      // The first message's reply is still being written when the rest of the burst arrives.
      if (customerTexts(call).at(-1) === 'hi') await aborted(call);
      return { text: `Answer to: ${call.userText}` };
    };
    await say(customer, 'hi');
    await eventually(() => replyCallsWith('hi').length > 0 || undefined, 15_000);
    await say(customer, 'I need');
    await say(customer, 'my March invoice');
    await eventually(() => received(customer).length > 0 || undefined, 20_000);
    await turnsSettled(harness.services);

    expect(received(customer)).toEqual(['Answer to: my March invoice']);
    expect(restarts() - restartsBefore).toBe(1);
    expect(abortedReplies() - abortedBefore).toBe(1);
    // Two reply calls: the aborted one (the first message alone) and the one that answered all three.
    expect(replyCallsWith('hi').map(customerTexts)).toEqual([['hi'], ['hi', 'I need', 'my March invoice']]);
    await transcriptsWritten(harness.services);
    const stored = await harness.services.transcripts.conversationMessages(conversationKeyFor(customer));
    expect(stored.map((message) => [message.direction, message.text, message.status])).toEqual([
      ['inbound', 'hi', 'received'],
      ['inbound', 'I need', 'received'],
      ['inbound', 'my March invoice', 'received'],
      ['outbound', 'Answer to: my March invoice', 'queued'],
    ]);
  }, 40_000);

  test('a message arriving after the first part was sent is the next turn: not lost, not answered twice, nothing started over', async () => {
    const customer = 'whatsapp:+447700926003';
    reply = (call) => ({ text: `Answer to: ${call.userText}` });
    const restartsBefore = restarts();
    const held = harness.twilio.holdNext({ accepted: true, to: customer });
    await say(customer, 'first question');
    // The reply's send is in flight: its part has gone out.
    const create = await held;
    await say(customer, 'second question');
    create.release();
    await eventually(() => received(customer).length >= 2 || undefined, 20_000);
    await turnsSettled(harness.services);

    expect(received(customer)).toEqual(['Answer to: first question', 'Answer to: second question']);
    expect(restarts() - restartsBefore).toBe(0);
    expect(replyCallsWith('first question').map(customerTexts)).toEqual([['first question'], ['first question', 'second question']]);
    expect(replyCallsWith('second question')).toHaveLength(1);
  }, 40_000);

  test('a restart never repeats a tool call, a hand-off notice or a send: the tool runs once, in the turn that answers', async () => {
    const customer = 'whatsapp:+447700926004';
    const restartsBefore = restarts();
    reply = (call) => {
      if (call.toolResults.length > 0) return { text: 'Done. The team will contact you here on WhatsApp.' };
      // The model calls the hand-off tool at once: the tool waits until the burst is surely over.
      if (call.toolNames.includes('book_sales_call')) return { toolCalls: [{ name: 'book_sales_call', input: { reason: 'Demo of the Pro plan' } }] };
      return { text: `Answer to: ${call.userText}` };
    };
    await say(customer, 'I would like a demo');
    await eventually(() => replyCallsWith('I would like a demo').length > 0 || undefined, 15_000);
    await say(customer, 'of the Pro plan');
    await eventually(() => received(customer).length > 0 || undefined, 20_000);
    await turnsSettled(harness.services);
    await handoffsSettled(harness.services);

    expect(restarts() - restartsBefore).toBe(1);
    expect(received(customer)).toEqual(['Done. The team will contact you here on WhatsApp.']);
    // The tool ran once (one call was answered with its result), for the whole burst.
    const toolFollowUps = harness.models.replyCalls().filter((call) => call.toolResults.length > 0 && call.userMessages.includes('of the Pro plan'));
    expect(toolFollowUps).toHaveLength(1);
    expect(replyCallsWith('I would like a demo').filter((call) => call.toolResults.length > 0)).toEqual(toolFollowUps);
    const handoffs = (await harness.services.handoffs.list({ limit: 50 })).filter((entry) => entry.customer.address === customer);
    expect(handoffs).toHaveLength(1);
    const notices = harness.twilio.messages.filter((message) => message.to === ANA && message.body.includes(customer.replace('whatsapp:', '')));
    expect(notices).toHaveLength(1);
  }, 40_000);
});

describe('the widget', () => {
  test('typing holds the reply; stopping releases it', async () => {
    const restartsBefore = restarts('web');
    const session = await harness.http.post('/api/widget/session').set('Origin', SHOP).send({ siteKey: 'test-site' });
    const { token, conversationId } = session.body as { token: string; conversationId: string };
    const typing = async (value: boolean) =>
      expect((await harness.http.post('/api/widget/typing').set('Origin', SHOP).set('Authorization', `Bearer ${token}`).send({ typing: value })).status).toBe(
        204,
      );
    let answer: (() => void) | undefined;
    reply = async (call) => {
      if (customerTexts(call).at(-1) === 'do you ship to Spain') await new Promise<void>((resolve) => (answer = resolve));
      return { text: `Answer to: ${call.userText}` };
    };
    const posted = await harness.http
      .post('/api/widget/messages')
      .set('Origin', SHOP)
      .set('Authorization', `Bearer ${token}`)
      .send({ clientMessageId: 'typing-hold-1', text: 'do you ship to Spain' });
    expect(posted.status).toBe(202);
    await eventually(() => answer, 15_000);
    // The visitor goes on typing while the answer is written. The worker hears it on the inbox
    // notices' channel, not in the report's reply: the answer is let go once a listener of our
    // own has heard it too (a machine that stalls between Redis's two writes does not race it).
    const notices = duplicateRedis(harness.services.redis);
    const heard: string[] = [];
    notices.on('message', (_channel: string, notice: string) => heard.push(notice));
    await notices.subscribe(INBOX_NOTICE_CHANNEL);
    await typing(true);
    await eventually(() => heard.some((notice) => notice.startsWith('typing|') && notice.endsWith(conversationId)) || undefined, 10_000);
    await notices.quit();
    answer?.();
    const events = createEventLog(harness.services.redis);
    const replies = async () => (await events.after(conversationId, '0-0')).filter((event) => event.type === 'delta' || event.type === 'message');
    await eventually(
      () => harness.logs.some((line) => line.event === 'turn-answered' && line.conversationKey === harness.logId(conversationId)) || undefined,
      15_000,
    );
    // Held while the typing reports stand (each stands for the web quiet period; the widget repeats them).
    for (let report = 0; report < 4; report += 1) {
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(await replies()).toEqual([]);
      await typing(true);
    }
    await typing(false);
    await eventually(async () => (await replies()).some((event) => event.type === 'message') || undefined, 15_000);
    await turnsSettled(harness.services);
    expect((await replies()).find((event) => event.type === 'message')?.data).toMatchObject({ text: 'Answer to: do you ship to Spain' });
    // Typing alone never starts a turn over.
    expect(restarts('web') - restartsBefore).toBe(0);
    await events.close();
  }, 40_000);
});
