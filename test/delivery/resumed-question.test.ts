/**
 * A question whose first send fails after its reply was stored: the batch's retry resumes the
 * stored reply instead of running the turn again, and must send the same question — with its
 * answers to tap, not as bare text. WhatsApp end to end (signed webhook → worker → the real test
 * MCP server → fake Twilio answering 503 once; Redis and FerretDB real) and the widget (its send
 * refused once): the customer gets "Please confirm" once, with Confirm and Cancel as buttons, a
 * reload of the widget shows them still open, and a tap on them confirms.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { createEventLog } from '../../channels/web/event-log.js';
import { ChannelSendError } from '../../src/errors/index.js';
import { BUSINESS_CATEGORY_PREFIXES } from '../support/business-mcp.js';
import { judgeRoutingTo, type Script } from '../support/deterministic-model.js';
import { eventually, newMessageSid, startHarness, type Harness } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';
import { turnsSettled } from '../support/settled.js';

const ANA = 'whatsapp:+447700906501';
const SHOP = 'https://shop.example.test';
const SECRET = 'shop-identity-secret-0123456789abcdef';

const model: Script = ({ userText, system, toolResults }) => {
  const outcome = /Result: (.*)\. Continue from there\./s.exec(system)?.[1];
  if (outcome) return { text: `Outcome: ${outcome}` };
  if (userText.includes('do:reschedule') && toolResults.length === 0) {
    return { toolCalls: [{ name: 'order_reschedule_delivery', input: { orderNumber: '5001', date: '2026-12-06' } }] };
  }
  return { text: `Answer to: ${userText}` };
};

let mcp: McpTestServer;
let harness: Harness;

beforeAll(async () => {
  mcp = await startMcpServer();
  harness = await startHarness({
    script: model,
    env: {
      MCP_SERVER_URL: mcp.url,
      MCP_CATEGORY_PREFIXES: BUSINESS_CATEGORY_PREFIXES,
      MESSAGE_RETRY_BACKOFF_MS: '100',
      WEB_SITES: JSON.stringify([{ key: 'test-site', name: 'Harbour Lane', origins: [SHOP], identitySecret: SECRET, language: 'en' }]),
    },
  });
  harness.models.setJudge(judgeRoutingTo('bookkeeper'));
  const linked = { name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] };
  await harness.services.contacts.upsert({ address: ANA, ...linked });
  await harness.services.contacts.upsert({ address: 'user:u-ana', externalId: 'u-ana', ...linked });
}, 60_000);
afterAll(async () => {
  await harness?.close();
  await mcp?.close();
});

test('WhatsApp: a confirmation whose send Twilio refused once is sent once, with its buttons', async () => {
  const sentTo = () => harness.twilio.messages.filter((message) => message.to === ANA);
  const messageSid = newMessageSid();
  harness.twilio.failNext(1, 503);
  await harness.sendWhatsapp({ from: ANA, body: 'do:reschedule the delivery please', messageSid });
  await eventually(() => sentTo().length > 0 || undefined, 20_000);
  await turnsSettled(harness.services);
  // The retry resumed the stored reply (the turn ran once)…
  expect(harness.logs).toContainEqual(expect.objectContaining({ event: 'reply-resumed', messageId: messageSid }));
  // …and the customer got the question once, as a quick reply with its two answers.
  const [question, ...more] = sentTo();
  expect(more).toEqual([]);
  expect(question?.body).toContain('Please confirm: Reschedule a delivery');
  expect(question?.choices?.map((choice) => choice.title)).toEqual(['Confirm', 'Cancel']);
  expect(mcp.applied).toEqual([]);

  // A tap on its Confirm runs the change once.
  const payload = question?.choices?.[0]?.id ?? '';
  await harness.sendWhatsapp({ from: ANA, body: 'Confirm', button: { text: 'Confirm', payload } });
  await eventually(() => (sentTo().length > 1 ? true : undefined), 20_000);
  await turnsSettled(harness.services);
  expect(sentTo()[1]?.body).toContain('The delivery of order 5001 is now on 2026-12-06.');
  expect(mcp.applied.map((write) => write.tool)).toEqual(['order_reschedule_delivery']);
}, 60_000);

test('widget: a confirmation whose send was refused once shows once, with its buttons, and keeps them open after a reload', async () => {
  const ts = String(Math.floor(Date.now() / 1000));
  const hash = createHmac('sha256', SECRET).update(['u-ana', '', '', ts].join('\n')).digest('hex');
  const session = await harness.http
    .post('/api/widget/session')
    .set('Origin', SHOP)
    .send({ siteKey: 'test-site', user: { id: 'u-ana', ts, hash } });
  expect(session.status).toBe(200);
  const { token, conversationId } = session.body as { token: string; conversationId: string };

  // The widget's first send of the question is refused (nothing left), as a failed event-log write would be.
  const web = harness.services.channels.get('web');
  if (!web) throw new Error('the web channel is off');
  const send = web.transport.send.bind(web.transport);
  let refused = 0;
  web.transport.send = async (inbound, text, part, options) => {
    if (refused === 0 && text.includes('Please confirm')) {
      refused += 1;
      throw new ChannelSendError('could not append the reply to the widget event log (test)', true);
    }
    return send(inbound, text, part, options);
  };
  try {
    const posted = await harness.http
      .post('/api/widget/messages')
      .set('Origin', SHOP)
      .set('Authorization', `Bearer ${token}`)
      .send({ clientMessageId: 'client-resumed-question-1', text: 'do:reschedule my delivery please' });
    expect(posted.status).toBe(202);
    const events = createEventLog(harness.services.redis);
    const shown = async () =>
      (await events.after(conversationId, '0')).filter((event) => event.type === 'message' && event.data.role === 'assistant').map((event) => event.data);
    await eventually(async () => ((await shown()).length > 0 ? true : undefined), 20_000);
    await turnsSettled(harness.services);
    expect(refused).toBe(1);

    // Shown once, with Confirm and Cancel under it.
    const messages = await shown();
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ text: expect.stringContaining('Please confirm: Reschedule a delivery') });
    expect((messages[0] as { choices?: { label: string }[] }).choices?.map((choice) => choice.label)).toEqual(['Confirm', 'Cancel']);

    // A reload: the history keeps the question's buttons, open while it waits for an answer.
    const history = await harness.http.get('/api/widget/history').set('Authorization', `Bearer ${token}`);
    expect(history.status).toBe(200);
    const question = (history.body.messages as { role: string; choices?: { id: string; label: string }[]; choicesOpen?: boolean }[]).find(
      (message) => message.role === 'assistant',
    );
    expect(question?.choices?.map((choice) => choice.label)).toEqual(['Confirm', 'Cancel']);
    expect(question?.choicesOpen).toBe(true);
  } finally {
    web.transport.send = send;
  }
}, 60_000);

test('a reply of several parts keeps its question on its last part, read back as stored, and out of the transcript records', async () => {
  const { transcripts } = harness.services;
  const question = {
    choices: [
      { id: 'act:x:confirm', label: 'Confirm' },
      { id: 'act:x:cancel', label: 'Cancel' },
    ],
    choicesExpireAt: 1_796_000_123_456,
    choicesLanguage: 'es',
  };
  const added: unknown[] = [];
  const stored = await transcripts.saveReplyParts(
    {
      conversationId: 'whatsapp:+447700906502',
      channel: 'whatsapp',
      replyTo: newMessageSid(),
      roleId: 'bookkeeper',
      parts: ['First part.', 'Please confirm:\n1. Confirm\n2. Cancel'],
      question,
    },
    { add: (more) => void added.push(...more), flush: async () => undefined },
  );
  const resumed = await transcripts.replyParts('whatsapp', stored[0]?.replyTo ?? '');
  for (const parts of [stored, resumed]) expect(parts.map((part) => part.question)).toEqual([undefined, question]);
  expect(JSON.stringify(added)).not.toContain('act:x:confirm');
});
