/**
 * The satisfaction question end to end, on both channels (fake Twilio, the widget's API and event
 * stream), with CSAT_AFTER_MINUTES short: the customer is asked once after the assistant's reply
 * goes quiet — a WhatsApp list of five, the widget's buttons in the visitor's language — taps a
 * rating (`ListId`, the widget's `choice`), adds a comment, and it is all stored in the `csat`
 * collection by `_id` with the conversation, its role and whether a person took part, never
 * reaching the model. After a teammate's `#done` the customer is asked at once.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Script } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { handoffsSettled } from '../support/settled.js';
import { openSse } from '../support/sse.js';
import type { CsatRecord } from '../../src/csat/csat-store.js';
import { createConversationState } from '../../src/orchestrator/state/conversation-state.js';

const CLEO = 'whatsapp:+34600914001';
const SHOP = 'https://csat-shop.example.test';
const SITES = JSON.stringify([{ key: 'csat-site', name: 'Harbour Lane', origins: [SHOP] }]);

const assistant: Script = (call) => {
  if (call.toolResults.at(-1)) return { text: 'Done. The team will answer you here.' };
  if (/person/i.test(call.userText) && call.toolNames.includes('open_support_chat')) {
    return { toolCalls: [{ name: 'open_support_chat', input: { reason: 'Cannot log in' } }] };
  }
  return { text: `Happy to help: ${call.userText}` };
};

const REPORTS_TOKEN = 'csat-reports-admin-token-0123456789';
let harness: Harness;
let server: Server;
let base: string;
beforeAll(async () => {
  harness = await startHarness({
    script: assistant,
    env: {
      CSAT_ENABLED: 'true',
      ADMIN_TOKEN: REPORTS_TOKEN,
      CSAT_AFTER_MINUTES: '0.02',
      WEB_SITES: SITES,
      NOTICE_BACKOFF_MS: '20',
      HANDOFF_TEAMS: JSON.stringify({ support: { label: 'Support team', members: [{ name: 'Cleo', whatsapp: CLEO }] } }),
    },
  });
  server = harness.services.app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.close();
  await harness.close();
});

const to = (address: string) => harness.twilio.messages.filter((message) => message.to === address);
const replyCalls = () => harness.models.calls.filter((call) => !call.structured).length;
const answers = (conversationId: string) =>
  eventually(async () => {
    const found = await harness.services.mongo.collection<CsatRecord>('csat').find({ conversationId }).toArray();
    return found.length > 0 && found.every((record) => record.score !== undefined) ? found : undefined;
  });

describe('on WhatsApp', () => {
  test('asked once after the quiet period as a list; the tap and the comment are stored, never a turn', async () => {
    const customer = 'whatsapp:+447700914001';
    await harness.sendWhatsapp({ from: customer, body: 'What are your opening hours?' });
    const question = await eventually(() => to(customer).find((message) => message.choices?.length === 5));
    expect(question.button).toBe('Choose');
    expect(question.body).toBe('How did we do? Tap a rating — it takes a second.');
    expect(question.choices?.map((choice) => choice.title)).toEqual(['⭐ Very poor', '⭐⭐ Poor', '⭐⭐⭐ Okay', '⭐⭐⭐⭐ Good', '⭐⭐⭐⭐⭐ Excellent']);
    const calls = replyCalls();

    const good = question.choices![3]!;
    await harness.sendWhatsapp({ from: customer, body: good.title, listRow: { id: good.id, title: good.title } });
    await eventually(() => to(customer).find((message) => message.body.startsWith('Thank you! Anything')));
    await harness.sendWhatsapp({ from: customer, body: 'Quick and clear, thank you' });
    await eventually(() => to(customer).find((message) => message.body === 'Thank you for your feedback!'));
    // The customer is thanked first; the comment reaches MongoDB behind it.
    const record = await eventually(async () => (await answers(customer)).find((answer) => answer.comment !== undefined));
    expect(record).toMatchObject({
      _id: expect.stringMatching(new RegExp(`^${customer.replace('+', '\\+')}\\|\\d+$`)),
      channel: 'whatsapp',
      roleId: expect.any(String),
      withPerson: false,
      trigger: 'quiet',
      score: 4,
      answeredVia: 'tap',
      comment: 'Quick and clear, thank you',
      askedAt: expect.any(Date),
    });
    expect(record?.roleId).not.toBe('unknown');
    expect(replyCalls()).toBe(calls);

    // Every message of it is the conversation's, in order: its recent history (kept from the model) and its transcript.
    const exchange = [
      'What are your opening hours?',
      'Happy to help: What are your opening hours?',
      'How did we do? Tap a rating — it takes a second.',
      good.title,
      'Thank you! Anything you would like to add? Just write it here — or carry on, no need to answer.',
      'Quick and clear, thank you',
      'Thank you for your feedback!',
    ];
    const recent = await harness.services.transcripts.recent(customer);
    expect(recent.map((entry) => entry.text.split('\n')[0])).toEqual(exchange);
    // The comment and its thanks are a turn's (its judge read the words as a comment): the rating's own messages are kept from the model.
    expect(recent.map((entry) => entry.offModel)).toEqual([undefined, undefined, 'rating', 'rating', 'rating', undefined, undefined]);
    const transcript = await eventually(async () => {
      const all = await harness.services.transcripts.conversationMessages(customer);
      return all.length === exchange.length && all.every((message) => message.direction === 'inbound' || message.status !== 'pending') ? all : undefined;
    });
    expect(transcript.map((message) => message.text.split('\n')[0])).toEqual(exchange);
    expect(transcript.filter((message) => message.direction === 'outbound').map((message) => message.status)).toEqual(['queued', 'queued', 'queued', 'queued']);

    // The owner's report shows the answer and its comment.
    const today = new Date().toISOString().slice(0, 10);
    const report = await harness.http.get(`/admin/reports/summary?from=${today}&to=${today}&channel=whatsapp`).set('Authorization', `Bearer ${REPORTS_TOKEN}`);
    expect(report.status).toBe(200);
    expect(report.body.csat).toMatchObject({ responses: 1, score: 4, distribution: { '4': 1 }, comments: [{ rating: 4, text: 'Quick and clear, thank you' }] });

    // The transcript page shows the answer where it was given, after the reply it rated.
    const link = new URL(harness.services.transcriptLinks.url(customer));
    const page = await harness.http.get(link.pathname + link.search);
    expect(page.status).toBe(200);
    const rating = /<li class="system rating"[^>]*>.*?<\/li>/s.exec(page.text)?.[0] ?? '';
    expect(rating).toContain('Rated 4 out of 5</p>');
    expect(rating).toContain('<p class="text">“Quick and clear, thank you”</p>');
    expect(page.text.indexOf('Happy to help: What are your opening hours?')).toBeLessThan(page.text.indexOf(rating));

    // The next exchange is the assistant's, and the question is not asked again within the cooldown.
    await harness.sendWhatsapp({ from: customer, body: 'And on Sundays?' });
    await eventually(() => to(customer).find((message) => message.body === 'Happy to help: And on Sundays?'));
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(to(customer).filter((message) => message.choices?.length === 5)).toHaveLength(1);
  });

  test('asked in the language the customer writes in; a second tap on the rated list is answered, logged and counted', async () => {
    const customer = 'whatsapp:+34600914003';
    await harness.sendWhatsapp({ from: customer, body: 'Hola, ¿a qué hora abrís el sábado?' });
    const question = await eventually(() => to(customer).find((message) => message.choices?.length === 5));
    expect(question.body).toBe('¿Qué tal le hemos atendido? Elija una valoración; solo es un segundo.');
    expect(question.choices?.at(-1)?.title).toBe('⭐⭐⭐⭐⭐ Excelente');
    const good = question.choices![3]!;
    await harness.sendWhatsapp({ from: customer, body: good.title, listRow: { id: good.id, title: good.title } });
    await eventually(() => to(customer).find((message) => message.body.startsWith('¡Gracias! ¿Quiere añadir algo?')));
    const again = () => harness.services.metrics.value('csat_total', { channel: 'whatsapp', outcome: 'tapped_again' });
    const before = again();
    // The same list tapped again (another row): the first rating stands, and the customer is told so.
    const best = question.choices![4]!;
    await harness.sendWhatsapp({ from: customer, body: best.title, listRow: { id: best.id, title: best.title } });
    await eventually(() => to(customer).find((message) => message.body === 'Ya tenemos su valoración. ¡Gracias!'));
    expect(again()).toBe(before + 1);
    const [record] = await answers(customer);
    expect(record).toMatchObject({ language: 'es', score: 4, answeredVia: 'tap' });
  });

  test('after a rating, a request is answered by the assistant, not taken as a comment', async () => {
    const customer = 'whatsapp:+447700914005';
    await harness.sendWhatsapp({ from: customer, body: 'Can I change my delivery address?' });
    const question = await eventually(() => to(customer).find((message) => message.choices?.length === 5));
    const poor = question.choices![1]!;
    await harness.sendWhatsapp({ from: customer, body: poor.title, listRow: { id: poor.id, title: poor.title } });
    await eventually(() => to(customer).find((message) => message.body.startsWith('Thank you! Anything')));
    const judged = harness.models.calls.filter((call) => call.structured).length;
    await harness.sendWhatsapp({ from: customer, body: 'I want to speak to a person' });
    // A whole turn (judge, reply, hand-off) on a machine running other suites beside this one.
    await eventually(() => to(customer).find((message) => message.body === 'Done. The team will answer you here.'), 30_000);
    expect(to(customer).map((message) => message.body)).not.toContain('Thank you for your feedback!');
    // Decided in the judge's one call: one structured call for the turn, no other.
    expect(harness.models.calls.filter((call) => call.structured).length).toBe(judged + 1);
    const [record] = await answers(customer);
    expect(record).toMatchObject({ score: 2 });
    expect(record?.comment).toBeUndefined();
  }, 60_000);

  test('not asked while another question waits for the customer: a later "3" answers that question, not a rating', async () => {
    const customer = 'whatsapp:+447700914004';
    await harness.sendWhatsapp({ from: customer, body: 'Which of my companies is billed?' });
    await eventually(() => to(customer).find((message) => message.body.startsWith('Happy to help')));
    // The assistant's own question (a choice, as select_entity asks it) waits for the customer.
    await createConversationState(harness.services.redis).setPending(customer, {
      runId: 'run-choice',
      toolName: 'select_entity',
      question: 'Which one? 1. Acme 2. Globex 3. Initech',
      data: {},
      attempts: 0,
    });
    await eventually(() =>
      harness.logs.find((line) => line.event === 'csat-not-asked' && line.conversationKey === harness.logId(customer) && line.reason === 'question-waiting'),
    );
    expect(to(customer).filter((message) => message.choices?.length === 5)).toHaveLength(0);
    const before = to(customer).length;
    await harness.sendWhatsapp({ from: customer, body: '3' });
    // Answered by the assistant's turn (whatever the choice's outcome), never thanked for a rating.
    await eventually(() => to(customer).length > before);
    expect(to(customer).at(-1)?.body).not.toMatch(/^Thank you! Anything/);
    expect(await harness.services.mongo.collection<CsatRecord>('csat').countDocuments({ conversationId: customer })).toBe(0);
  });

  test("after a teammate's #done: asked at once, stored with a person and the hand-off", async () => {
    const customer = 'whatsapp:+447700914002';
    await harness.sendWhatsapp({ from: customer, body: 'I need a person please', profileName: 'Maya' });
    await eventually(() => to(CLEO).find((message) => message.body.includes('+447700914002')));
    await handoffsSettled(harness.services);
    const [handoff] = await harness.services.handoffs.list({ limit: 1 });
    await harness.sendWhatsapp({ from: CLEO, body: `#${handoff!.shortCode} Hi Maya, Cleo here. Fixed it for you.` });
    await eventually(() => to(customer).find((message) => message.body.includes('Cleo here')));
    // The quiet check of the hand-off turn comes and goes while Cleo holds it: nothing asked.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(to(customer).filter((message) => message.choices?.length === 5)).toHaveLength(0);

    await harness.sendWhatsapp({ from: CLEO, body: '#done' });
    const question = await eventually(() => to(customer).find((message) => message.choices?.length === 5));
    await harness.sendWhatsapp({ from: customer, body: '5' });
    await eventually(() => to(customer).find((message) => message.body.startsWith('Thank you! Anything')));
    const [record] = await answers(customer);
    expect(question.body).toContain('How did we do?');
    expect(record).toMatchObject({
      withPerson: true,
      trigger: 'handed_back',
      handoffId: handoff!._id,
      roleId: handoff!.roleId,
      score: 5,
      answeredVia: 'typed',
    });
    const link = new URL(harness.services.transcriptLinks.url(customer));
    expect((await harness.http.get(link.pathname + link.search)).text).toContain('Rated 5 out of 5 after a teammate helped</p>');
  });
});

describe('in the widget', () => {
  test("asked in the visitor's language with its choices as buttons; a tapped choice is stored", async () => {
    const session = await harness.http.post('/api/widget/session').set('Origin', SHOP).send({ siteKey: 'csat-site' });
    const { token, conversationId } = session.body as { token: string; conversationId: string };
    const post = (body: Record<string, unknown>) =>
      harness.http.post('/api/widget/messages').set('Origin', SHOP).set('Authorization', `Bearer ${token}`).send(body);
    type Posted = { text: string; choices?: { id: string; label: string }[] };
    const { events } = await openSse(`${base}/api/widget/events?token=${encodeURIComponent(token)}`, {
      headers: { origin: SHOP },
      until: (all) => all.some((event) => event.event === 'message' && ((event.data as Posted).choices?.length ?? 0) === 5),
      timeoutMs: 15_000,
    });
    expect((await post({ clientMessageId: 'csat-web-1', text: '¿Hacéis envíos a Canarias?', language: 'es' })).status).toBe(202);
    const question = (await events).map((event) => event.data as Posted).find((data) => data.choices?.length === 5)!;
    expect(question.text).toContain('¿Qué tal le hemos atendido?');
    const best = question.choices!.at(-1)!;
    expect(best.label).toBe('⭐⭐⭐⭐⭐ Excelente');
    const calls = replyCalls();
    expect((await post({ clientMessageId: 'csat-web-2', text: best.label, choice: best.id, language: 'es' })).status).toBe(202);
    const [record] = await answers(conversationId);
    expect(record).toMatchObject({ channel: 'web', language: 'es', score: 5, answeredVia: 'tap', withPerson: false });
    expect(replyCalls()).toBe(calls);
  });
});
