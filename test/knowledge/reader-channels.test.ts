/**
 * The reader's verdict as customers get it, through the whole service (fake Twilio, the widget's
 * event stream): the reply model names the passages it used, and the service writes the
 * "Source:" line — in the customer's language, the address printed on WhatsApp, a link in the
 * widget — with nothing of the model's `[sources: …]` line ever streamed or sent; when the model
 * says the passages don't answer, the customer gets the service's "I don't have that
 * information" and the offer of a person instead of the model's text, and the miss is listed
 * once. A miss is recorded once the turn commits: a burst that starts its turn over lists one.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { schemaDefault, type ScriptedCall, type ScriptedReply } from '../support/deterministic-model.js';
import { eventually, newMessageSid, startHarness, type Harness } from '../support/harness.js';
import { turnsSettled } from '../support/settled.js';
import { openSse } from '../support/sse.js';

const ADMIN_TOKEN = 'reader-admin-token-0123456789abcdef';
const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };
const SHOP = 'https://shop.example.test';
const SITES = JSON.stringify([{ key: 'reader-site', name: 'Veloria', origins: [SHOP], language: 'en' }]);

/** The latest customer line the judge reads. */
const latestLine = (call: ScriptedCall) =>
  call.userText
    .split('\n')
    .filter((line) => line.startsWith('Customer: '))
    .at(-1) ?? call.userText;

/** Every turn needs the business's knowledge; delivery and surfboard questions get the content's words. */
function judge(call: ScriptedCall): ScriptedReply {
  const json = schemaDefault(call.schema) as Record<string, unknown>;
  json.route = 'support';
  json.inScope = true;
  const latest = latestLine(call);
  if ('knowledge' in json)
    json.knowledge = { needed: true, terms: /entrega|parcel|deliver/i.test(latest) ? 'delivery' : /surf/i.test(latest) ? 'surfboard' : '' };
  return { text: JSON.stringify(json) };
}

/** The reply model as the reader of the passages it was given. */
function script(call: ScriptedCall): ScriptedReply {
  if (!call.system.includes('<source n="1">')) return { text: "Sorry, I don't know that." };
  // The passages are about fixing surfboards, not renting them: the reader declines (its made-up answer never goes out).
  if (/rent/i.test(call.userText)) return { text: '[sources: none]\nSure, we rent surfboards all winter!' };
  if (/surf/i.test(call.userText)) return { text: '[sources: 1]\nYes: our workshop repairs fins within a week.' };
  if (/entrega/i.test(call.userText)) return { text: '[sources: 1]\nLa entrega tarda de 2 a 3 días laborables.' };
  return { text: '[sources: 1]\nDelivery takes 2 to 3 business days.' };
}

let harness: Harness;
let server: Server;
let base: string;
beforeAll(async () => {
  harness = await startHarness({ script, env: { ADMIN_TOKEN, WEB_SITES: SITES, COALESCE_MS_WHATSAPP: '3000', COALESCE_MS_WEB: '0' } });
  harness.models.setJudge(judge);
  server = harness.services.app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const added = await harness.http
    .post('/admin/knowledge/faq')
    .set(admin)
    .send({
      entries: [
        { question: 'How long does delivery take?', answer: 'Standard delivery takes 2 to 3 business days.', url: 'https://help.example/shipping' },
        { question: 'Surfboard repairs', answer: 'Our workshop repairs surfboard fins and dings within a week.' },
      ],
    });
  expect(added.status).toBe(201);
  await eventually(async () => {
    const overview = await harness.http.get('/admin/knowledge').set(admin);
    return (overview.body as { index: { chunks: number } }).index.chunks >= 2 || undefined;
  });
}, 30_000);
afterAll(async () => {
  server?.close();
  await harness?.close();
});

const received = (customer: string) => harness.twilio.messages.filter((message) => message.to === customer).map((message) => message.body);
const misses = async () => {
  const response = await harness.http.get('/admin/knowledge/misses').set(admin);
  expect(response.status).toBe(200);
  return (response.body as { misses: { question: string; channel: string }[] }).misses;
};
async function whatsappReply(customer: string, body: string): Promise<string[]> {
  expect((await harness.sendWhatsapp({ from: customer, body, messageSid: newMessageSid() })).status).toBe(200);
  await eventually(() => received(customer).length > 0 || undefined, 15_000);
  await turnsSettled(harness.services);
  return received(customer);
}

describe('on WhatsApp', () => {
  test('the service writes the "Source:" line in the customer\'s language; the verdict line never goes out', async () => {
    expect(await whatsappReply('whatsapp:+447700931001', 'How long will my parcel take?')).toEqual([
      'Delivery takes 2 to 3 business days.\n\nSource: How long does delivery take? – https://help.example/shipping',
    ]);
    expect(await whatsappReply('whatsapp:+447700931002', '¿Cuánto tarda la entrega de mi pedido?')).toEqual([
      'La entrega tarda de 2 a 3 días laborables.\n\nFuente: How long does delivery take? – https://help.example/shipping',
    ]);
    // A FAQ entry without an address is cited by its question.
    expect(await whatsappReply('whatsapp:+447700931005', 'Do you repair surfboard fins?')).toEqual([
      'Yes: our workshop repairs fins within a week.\n\nSource: Surfboard repairs',
    ]);
  }, 30_000);

  test("passages that don't answer: the service's words and a person offered, never the model's text; the miss listed once", async () => {
    const question = 'Do you rent surfboards in winter?';
    expect(await whatsappReply('whatsapp:+447700931003', question)).toEqual([
      "I'm sorry, I don't have that information. Would you like me to put you in touch with someone from our team?",
    ]);
    expect((await misses()).filter((miss) => miss.question === question)).toEqual([expect.objectContaining({ channel: 'whatsapp' })]);
  }, 30_000);

  test('a burst that starts its turn over (a second message while the reply is held) lists one miss, not one per run', async () => {
    const customer = 'whatsapp:+447700931004';
    const before = (await misses()).length;
    expect((await harness.sendWhatsapp({ from: customer, body: 'Can I pay with crypto coins?', messageSid: newMessageSid() })).status).toBe(200);
    // The first message's turn ran (nothing found: a miss) and its reply waits for the quiet period.
    await eventually(() => harness.models.replyCalls().some((call) => call.userText.includes('crypto coins')) || undefined);
    expect((await harness.sendWhatsapp({ from: customer, body: 'Or with gold bars?', messageSid: newMessageSid() })).status).toBe(200);
    await eventually(() => received(customer).length > 0 || undefined, 15_000);
    await turnsSettled(harness.services);
    expect(received(customer)).toEqual(["Sorry, I don't know that."]);
    expect((await misses()).slice(0, (await misses()).length - before).map((miss) => miss.question)).toEqual(['Or with gold bars?']);
  }, 30_000);
});

describe('in the widget', () => {
  /** The visitor's message, and what the widget's event stream showed of the reply: its streamed pieces and the whole message. */
  async function widgetReply(text: string): Promise<{ streamed: string; message: string }> {
    const session = await harness.http.post('/api/widget/session').set('Origin', SHOP).send({ siteKey: 'reader-site' });
    const token = session.body.token as string;
    const { events: streaming } = await openSse(`${base}/api/widget/events?token=${encodeURIComponent(token)}`, {
      headers: { origin: SHOP },
      until: (events) => events.some((event) => event.event === 'message'),
    });
    const posted = await harness.http
      .post('/api/widget/messages')
      .set('Origin', SHOP)
      .set('Authorization', `Bearer ${token}`)
      .send({ clientMessageId: `reader-${Date.now()}`, text });
    expect(posted.status).toBe(202);
    const events = await streaming;
    const message = (events.find((event) => event.event === 'message')!.data as { text: string }).text;
    const streamed = events.filter((event) => event.event === 'delta').map((event) => (event.data as { text: string }).text);
    return { streamed: streamed.join(''), message };
  }

  test('streams the answer without the verdict line and ends it with a link to the passage', async () => {
    const { streamed, message } = await widgetReply('how long does delivery take?');
    expect(message).toBe('Delivery takes 2 to 3 business days.\n\nSource: [How long does delivery take?](https://help.example/shipping)');
    expect(streamed).toBe(message);
  }, 30_000);

  test("streams the service's words, never the model's, when the passages don't answer", async () => {
    const { streamed, message } = await widgetReply('can I rent a surfboard for the weekend?');
    expect(message).toBe("I'm sorry, I don't have that information. Would you like me to put you in touch with someone from our team?");
    expect(streamed).toBe(message);
  }, 30_000);
});
