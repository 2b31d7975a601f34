/**
 * Human takeover on WhatsApp, as the people at both ends see it: a teammate answers the
 * customer from their own WhatsApp (reply-to on the notice, or its short code), signed with
 * their name and from the business number; the rest of the team hears who took it; a second
 * teammate is told who is handling it; while taken the assistant is silent and the customer's
 * messages are relayed to the holder; `#done`, an operator or the idle timeout hands back, and
 * the assistant's next turn sees what the teammate said. Outside the 24-hour window replies go
 * out as the team's approved template. Bad input gets a clear answer and a log line.
 */
import { appendFileSync } from 'node:fs';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import type { Script } from '../support/deterministic-model.js';
import { eventually, startHarness, TEST_SENDER, type Harness } from '../support/harness.js';
import { handoffsSettled, transcriptsWritten, turnsSettled } from '../support/settled.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';
import { takeoverKeys, WATCHED_TTL_SECONDS } from '../../src/takeover/takeover-state.js';
import { enqueueTurn } from '../../src/queue/turn-queue.js';
import type { HandoffRecord } from '../../src/handoff/handoff-store.js';
import type { ConversationEvent } from '../../src/takeover/takeover.js';
import { CUSTOMER_AT_FIELD, transcriptKeys } from '../../src/store/transcript-keys.js';

const ANA = 'whatsapp:+34600912001';
const BEN = 'whatsapp:+34600912002';
const CLEO = 'whatsapp:+34600912003';
const DAN = 'whatsapp:+34600912004';
const SUPPORT_TEMPLATE = `HX${'5a'.repeat(16)}`;
const LATE_TEMPLATE = `HX${'6b'.repeat(16)}`;
const ADMIN_TOKEN = 'admin-token-for-takeover-tests-0123';
const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>';

/** The model: hands off to sales on "demo", to support on "person"; otherwise echoes. */
const assistant: Script = (call) => {
  const last = call.toolResults.at(-1);
  if (last) return { text: 'Done. The team will contact you here on WhatsApp.' };
  if (/demo/i.test(call.userText) && call.toolNames.includes('book_sales_call')) {
    return { toolCalls: [{ name: 'book_sales_call', input: { reason: 'Demo of the Pro plan' } }] };
  }
  if (/person/i.test(call.userText) && call.toolNames.includes('open_support_chat')) {
    return { toolCalls: [{ name: 'open_support_chat', input: { reason: 'Cannot log in' } }] };
  }
  return { text: `Happy to help: ${call.userText}` };
};

type Receiver = Awaited<ReturnType<typeof startWebhookReceiver>>;

const teams = (receiver: Receiver) =>
  JSON.stringify({
    sales: {
      label: 'Sales team',
      members: [
        { name: 'Ana', whatsapp: ANA },
        { name: 'Ben', whatsapp: BEN, email: 'ben@example.test' },
        { name: 'Dan', whatsapp: DAN },
      ],
      webhooks: [receiver.url('/sales')],
    },
    support: { label: 'Support team', members: [{ name: 'Cleo', whatsapp: CLEO }], replyContentSid: SUPPORT_TEMPLATE },
  });

async function start(receiver: Receiver, env: Record<string, string> = {}) {
  return startHarness({
    script: assistant,
    env: {
      HANDOFF_TEAMS: teams(receiver),
      BUSINESS_NAME: 'Harbour Lane',
      NOTICE_BACKOFF_MS: '20',
      ADMIN_TOKEN,
      WHATSAPP_LATE_REPLY_CONTENT_SID: LATE_TEMPLATE,
      ...env,
    },
  });
}

function helpers(harness: () => Harness) {
  const to = (address: string) => harness().twilio.messages.filter((message) => message.to === address);
  const bodiesTo = (address: string) => to(address).map((message) => message.body);
  /** The customer asks for a person; resolves once each of the team's members has the notice. */
  const handOff = async (customer: string, body: string, members: string[]) => {
    await harness().sendWhatsapp({ from: customer, body, profileName: 'Maya' });
    await eventually(() => members.every((member) => to(member).some((message) => message.body.includes(customer.replace('whatsapp:', '')))) || undefined);
    // Notices recorded sent (a teammate can reply to them) and the assistant's answer out.
    await handoffsSettled(harness().services);
    const [handoff] = await harness().services.handoffs.list({ limit: 1 });
    if (!handoff || handoff.customer.address !== customer) throw new Error('hand-off not found');
    const noticeTo = (member: string) => to(member).find((message) => message.body.includes(customer.replace('whatsapp:', '')))!.sid;
    return { handoff, noticeTo };
  };
  const refreshed = async (handoffId: string) => (await harness().services.handoffs.get(handoffId)) as HandoffRecord;
  const refusals = () => harness().logs.filter((line) => line.event === 'teammate-message-refused');
  /** The conversation as MongoDB holds it once the transcript writer has caught up. */
  const storedMessages = async (conversationId: string) => {
    await transcriptsWritten(harness().services);
    return harness().services.transcripts.conversationMessages(conversationId);
  };
  return { to, bodiesTo, handOff, refreshed, refusals, storedMessages };
}

describe('takeover on WhatsApp', () => {
  let receiver: Receiver;
  let harness: Harness;
  const { to, bodiesTo, handOff, refreshed, refusals, storedMessages } = helpers(() => harness);
  /** The customer last wrote `hours` ago: the transcript hash's stamp, and the window key releases before it wrote. */
  const lastWroteHoursAgo = async (customer: string, hours: number) => {
    const at = String(Date.now() - hours * 60 * 60 * 1000);
    await harness.services.redis.hset(transcriptKeys.conversation(customer), CUSTOMER_AT_FIELD, at);
    await harness.services.redis.set(takeoverKeys.window(customer), at);
  };

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    harness = await start(receiver);
  });
  afterAll(async () => {
    if (process.env.TAKEOVER_DEBUG) appendFileSync(process.env.TAKEOVER_DEBUG, harness.logs.map((line) => JSON.stringify(line)).join('\n'));
    await harness.close();
    await receiver.close();
  });
  beforeEach(() => {
    receiver.received.splice(0);
    receiver.answerWith(() => 200);
  });

  test('by reply-to: the answer reaches the customer signed, the team hears who took it, the assistant stays silent, #done hands back', async () => {
    const customer = 'whatsapp:+447700912001';
    const { handoff, noticeTo } = await handOff(customer, 'I would like a demo of the Pro plan', [ANA, BEN]);
    expect(handoff.status).toBe('open');
    expect(to(ANA)[0]?.body).toContain(`Answer here: reply to this message, or start yours with #${handoff.shortCode}. #done hands back.`);
    const before = bodiesTo(customer).length;

    const sentAt = Date.now();
    const reply = await harness.sendWhatsapp({ from: ANA, body: 'Hi Maya, Ana here. When suits you for the demo?', repliedTo: noticeTo(ANA) });
    expect(reply.status).toBe(200);
    expect(reply.text).toBe(EMPTY_TWIML);
    const [answer] = await eventually(() => (to(customer).length > before ? to(customer).slice(before) : undefined));
    expect(answer).toMatchObject({ from: TEST_SENDER, body: 'Ana (Sales team): Hi Maya, Ana here. When suits you for the demo?' });
    if (process.env.TAKEOVER_LATENCY_FILE)
      appendFileSync(process.env.TAKEOVER_LATENCY_FILE, `reply-to webhook → customer send: ${answer!.receivedAt - sentAt} ms\n`);

    // The rest of the team (Ben's WhatsApp and the team's webhook) hears who took it; Ana does not.
    const took = `Ana took this: Maya — Demo of the Pro plan (#${handoff.shortCode}).`;
    const webhook = await eventually(() => (bodiesTo(BEN).includes(took) ? receiver.received.find((entry) => entry.body.text === took) : undefined));
    expect(webhook).toMatchObject({ path: '/sales', body: { text: took } });
    expect(bodiesTo(DAN)).toContain(took);
    expect(bodiesTo(ANA)).not.toContain(took);
    expect(await refreshed(handoff._id)).toMatchObject({ status: 'taken', takenBy: { id: ANA, name: 'Ana', via: 'whatsapp' } });

    // While taken: the customer's message is recorded and relayed to Ana; the model is never called.
    const modelCalls = harness.models.calls.length;
    const sent = bodiesTo(customer).length;
    await harness.sendWhatsapp({ from: customer, body: 'Tomorrow at 10 works for me' });
    const relay = await eventually(() => to(ANA).find((message) => message.body.startsWith('Customer: Tomorrow')));
    expect(relay.body).toBe(`Customer: Tomorrow at 10 works for me\n#${handoff.shortCode}`);
    await turnsSettled(harness.services);
    expect(harness.models.calls.length).toBe(modelCalls);
    expect(bodiesTo(customer)).toHaveLength(sent);
    const stored = await storedMessages(customer);
    expect(stored.filter((message) => message.direction === 'inbound').map((message) => message.text)).toContain('Tomorrow at 10 works for me');

    // Reply-to works on the relay too.
    await harness.sendWhatsapp({ from: ANA, body: 'Booked, see you then!', repliedTo: relay.sid });
    await eventually(() => bodiesTo(customer).includes('Ana (Sales team): Booked, see you then!') || undefined);
    const teammateRecord = (await storedMessages(customer)).find((message) => message.text === 'Booked, see you then!');
    expect(teammateRecord).toMatchObject({ direction: 'outbound', roleId: 'teammate:Ana', status: 'queued' });

    // #done: the customer and Ana are told; the record says who and why.
    expect((await harness.sendWhatsapp({ from: ANA, body: '#done' })).text).toBe(EMPTY_TWIML);
    await eventually(
      () => bodiesTo(customer).includes("You're back with our assistant. Ana from the Sales team has handed this conversation back.") || undefined,
    );
    await eventually(() => bodiesTo(ANA).includes(`Handed back to the assistant: Maya (#${handoff.shortCode}). The customer was told.`) || undefined);
    expect(await refreshed(handoff._id)).toMatchObject({ status: 'handed_back', endedBy: { id: ANA }, endReason: 'teammate' });
    expect(await harness.services.takeover.current(customer)).toBeUndefined();

    // The assistant answers again and sees the teammate's messages and a one-line summary.
    await harness.sendWhatsapp({ from: customer, body: 'Thanks! Another question about invoices' });
    await eventually(() => bodiesTo(customer).includes('Happy to help: Thanks! Another question about invoices') || undefined);
    const prompt = harness.models.replyCalls().at(-1)!.promptText;
    expect(prompt).toContain('[Ana, Sales team] Booked, see you then!');
    expect(prompt).toContain('Tomorrow at 10 works for me');
    expect(prompt).toMatch(
      /\(Summary: Ana of the Sales team answered the customer in person from \d\d:\d\d to \d\d:\d\d UTC about \\"Demo of the Pro plan\\"; handed back\./,
    );
  });

  test('by short code, where a client cannot reply-to', async () => {
    const customer = 'whatsapp:+447700912002';
    const { handoff } = await handOff(customer, 'I need a person, my login is broken', [CLEO]);
    const response = await harness.sendWhatsapp({ from: CLEO, body: `#${handoff.shortCode} Hello, Cleo from support here. Which email do you log in with?` });
    expect(response.text).toBe(EMPTY_TWIML);
    await eventually(() => bodiesTo(customer).includes('Cleo (Support team): Hello, Cleo from support here. Which email do you log in with?') || undefined);
    expect(await refreshed(handoff._id)).toMatchObject({ status: 'taken', takenBy: { name: 'Cleo' } });
    // While she holds it, plain text (no code, no reply-to) continues the same conversation.
    await harness.sendWhatsapp({ from: CLEO, body: 'I have reset it for you.' });
    await eventually(() => bodiesTo(customer).includes('Cleo (Support team): I have reset it for you.') || undefined);
  });

  test('the race: two teammates reply within milliseconds — one message reaches the customer, the other is told who is handling it', async () => {
    // Three rounds: a race that is lost only sometimes is still lost.
    for (const customer of ['whatsapp:+447700912003', 'whatsapp:+447700912011', 'whatsapp:+447700912012']) {
      const { handoff, noticeTo } = await handOff(customer, 'Could I get a demo for my team?', [ANA, BEN]);
      const before = bodiesTo(customer).length;
      const [fromAna, fromBen] = await Promise.all([
        harness.sendWhatsapp({ from: ANA, body: 'Ana here, happy to help', repliedTo: noticeTo(ANA) }),
        harness.sendWhatsapp({ from: BEN, body: 'Ben here, happy to help', repliedTo: noticeTo(BEN) }),
      ]);
      const winner = (await refreshed(handoff._id)).takenBy!;
      const loser = winner.id === ANA ? { response: fromBen, name: 'Ben' } : { response: fromAna, name: 'Ana' };
      expect((winner.id === ANA ? fromAna : fromBen).text).toBe(EMPTY_TWIML);
      expect(loser.response.text).toContain(
        `<Message>${winner.name} is handling this (#${handoff.shortCode}). Your message did not reach the customer.</Message>`,
      );
      await eventually(() => (to(customer).length > before ? true : undefined));
      await turnsSettled(harness.services);
      expect(bodiesTo(customer).slice(before)).toEqual([`${winner.name} (Sales team): ${winner.name} here, happy to help`]);
      expect((await storedMessages(customer)).some((message) => message.text.startsWith(`${loser.name} here`))).toBe(false);
      expect(refusals().some((line) => line.reason === 'held' && line.handoffId === handoff._id)).toBe(true);
    }
  });

  test('the service under a crowd: eight takers at once, exactly one holds it; the rest are told who; subscribers see every message, after the end too', async () => {
    const customer = 'whatsapp:+447700912010';
    const { handoff } = await handOff(customer, 'demo for a big team', [ANA, BEN]);
    const events: ConversationEvent[] = [];
    const unsubscribe = await harness.services.takeover.subscribe(customer, (event) => events.push(event));
    const takers = Array.from({ length: 8 }, (_, index) => ({ id: `page:T${index}`, name: `T${index}`, via: 'page' as const }));
    const results = await Promise.all(takers.map((by) => harness.services.takeover.takeOver({ handoffId: handoff._id, by })));
    const winners = results.filter((result) => result.outcome === 'taken');
    expect(winners).toHaveLength(1);
    const holder = (await refreshed(handoff._id)).takenBy!;
    expect(results.filter((result) => result.outcome === 'held').map((result) => (result.outcome === 'held' ? result.holder.id : ''))).toEqual(
      Array(7).fill(holder.id),
    );

    const reply = await harness.services.takeover.teammateReply({ handoffId: handoff._id, by: holder, text: 'Hello from the page' });
    expect(reply).toMatchObject({ outcome: 'queued', claimed: false });
    await eventually(() => bodiesTo(customer).includes(`${holder.name} (Sales team): Hello from the page`) || undefined);
    await harness.sendWhatsapp({ from: customer, body: 'Hi page person' });
    await eventually(
      () => events.some((event) => event.type === 'message' && event.message.author === 'customer' && event.message.text === 'Hi page person') || undefined,
    );
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'takeover', status: 'taken', handoffId: handoff._id, by: { name: holder.name, via: 'page' } }),
    );
    expect(events).toContainEqual({
      type: 'message',
      message: expect.objectContaining({ author: 'teammate', name: holder.name, text: 'Hello from the page' }),
    });
    // A closer racing a second taker: the hand-off ends closed, and the assistant has the conversation again.
    const [closed] = await Promise.all([
      harness.services.takeover.close({ handoffId: handoff._id, by: { id: 'admin:Olga', name: 'Olga', via: 'admin' }, reason: 'admin' }),
      harness.services.takeover.takeOver({ handoffId: handoff._id, by: { id: 'page:Late', name: 'Late', via: 'page' } }),
    ]);
    expect(closed).toMatchObject({ outcome: 'closed', wasTaken: true });
    expect(await refreshed(handoff._id)).toMatchObject({ status: 'closed', endedBy: { id: 'admin:Olga' } });
    await eventually(() => events.some((event) => event.type === 'takeover' && event.status === 'closed') || undefined);
    expect(await harness.services.takeover.current(customer)).toBeUndefined();
    // The assistant's again, and the page still open gets the customer's next message and the reply:
    // clearing the mirror kept the page's watched mark, and what is left of it lives no longer than a mark.
    await harness.sendWhatsapp({ from: customer, body: 'Still there, assistant?' });
    const answered = (author: 'customer' | 'assistant') =>
      events.some((event) => event.type === 'message' && event.message.author === author && event.message.text.includes('Still there, assistant?'));
    await eventually(() => (answered('customer') && answered('assistant')) || undefined);
    expect(await harness.services.redis.hget(takeoverKeys.takeover(customer), 'handoffId')).toBeNull();
    expect(await harness.services.redis.ttl(takeoverKeys.takeover(customer))).toBeGreaterThan(0);
    expect(await harness.services.redis.ttl(takeoverKeys.takeover(customer))).toBeLessThanOrEqual(WATCHED_TTL_SECONDS);
    await unsubscribe();
  });

  test('bad input: unknown code, #done from a non-holder, no target, a malformed reply-to; a teammate is never a customer', async () => {
    const customer = 'whatsapp:+447700912004';
    const { handoff, noticeTo } = await handOff(customer, 'demo please', [ANA, BEN]);
    await harness.sendWhatsapp({ from: ANA, body: 'On it', repliedTo: noticeTo(ANA) });
    await eventually(() => bodiesTo(customer).includes('Ana (Sales team): On it') || undefined);
    const modelCalls = harness.models.calls.length;
    const sent = bodiesTo(customer).length;

    const unknown = await harness.sendWhatsapp({ from: BEN, body: '#0042 hello?' });
    expect(unknown.status).toBe(200);
    expect(unknown.text).toContain('<Message>No open hand-off has the code #0042.');
    expect(refusals().at(-1)).toMatchObject({ level: 'warn', reason: 'unknown_code', from: harness.logId(BEN) });

    const notHolder = await harness.sendWhatsapp({ from: BEN, body: '#done', repliedTo: noticeTo(BEN) });
    expect(notHolder.text).toContain(`<Message>Ana is handling this (#${handoff.shortCode}); only they can hand it back.</Message>`);
    expect(refusals().at(-1)).toMatchObject({ reason: 'not_holder', handoffId: handoff._id });
    expect(await refreshed(handoff._id)).toMatchObject({ status: 'taken', takenBy: { id: ANA } });

    // Dan holds nothing: plain text without a code or reply-to has nowhere to go.
    const lost = await harness.sendWhatsapp({ from: DAN, body: 'Who should I call?' });
    expect(lost.text).toContain('<Message>To answer a customer, reply to their hand-off notice, or start your message with the code it shows');
    expect(refusals().at(-1)).toMatchObject({ reason: 'no_target' });

    const empty = await harness.sendWhatsapp({ from: ANA, body: `#${handoff.shortCode}` });
    expect(empty.text).toContain('is empty');
    const tooLong = await harness.sendWhatsapp({ from: ANA, body: `#${handoff.shortCode} ${'x'.repeat(1501)}` });
    expect(tooLong.text).toContain('is longer than 1500 characters; send it in parts.');
    expect(refusals().at(-1)).toMatchObject({ reason: 'too_long' });

    const malformed = await harness.sendWhatsapp({ from: ANA, body: 'hi', repliedTo: 'not-a-sid' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error).toMatch(/OriginalRepliedMessageSid/);
    expect(harness.logs.some((line) => line.event === 'webhook-rejected' && line.reason === 'malformed')).toBe(true);

    await turnsSettled(harness.services);
    expect(harness.models.calls.length).toBe(modelCalls);
    expect(bodiesTo(customer)).toHaveLength(sent);
    // No conversation was ever opened for a teammate's number.
    for (const teammate of [ANA, BEN, DAN]) expect(await harness.services.transcripts.conversations.findById(teammate).lean().exec()).toBeNull();
  });

  test('outside the 24-hour window a reply goes out as the team’s approved template, and the teammate is told', async () => {
    const customer = 'whatsapp:+447700912005';
    const { handoff } = await handOff(customer, 'I need a person about my account', [CLEO]);
    // The customer's last message was 25 hours ago.
    await lastWroteHoursAgo(customer, 25);
    const before = to(customer).length;
    await harness.sendWhatsapp({ from: CLEO, body: `#${handoff.shortCode} Sorry for the wait, is this still a problem?` });
    const [template] = await eventually(() => (to(customer).length > before ? to(customer).slice(before) : undefined));
    expect(template).toMatchObject({ from: TEST_SENDER, contentSid: SUPPORT_TEMPLATE, body: '' });
    expect(JSON.parse(template!.contentVariables!)).toEqual({ '1': 'Cleo (Support team): Sorry for the wait, is this still a problem?' });
    await eventually(
      () =>
        bodiesTo(CLEO).includes(`Sent as your team's approved template: the customer's last message was more than 24 hours ago (#${handoff.shortCode}).`) ||
        undefined,
    );
  });

  test('outside the window without a template: nothing reaches the customer, the teammate is told why', async () => {
    const customer = 'whatsapp:+447700912006';
    const { handoff, noticeTo } = await handOff(customer, 'demo for us?', [ANA, BEN]);
    await lastWroteHoursAgo(customer, 25);
    const before = to(customer).length;
    await harness.sendWhatsapp({ from: ANA, body: 'Still interested?', repliedTo: noticeTo(ANA) });
    await eventually(() => bodiesTo(ANA).some((body) => body.startsWith('Not sent: the customer') && body.includes(`(#${handoff.shortCode})`)) || undefined);
    await turnsSettled(harness.services);
    expect(to(customer)).toHaveLength(before);
    expect((await storedMessages(customer)).find((message) => message.text === 'Still interested?')).toMatchObject({
      status: 'failed',
    });
  });

  test("the assistant's own late reply (its message older than the window) goes out as the late-reply template", async () => {
    const customer = 'whatsapp:+447700912007';
    const receivedAt = Date.now() - 25 * 60 * 60 * 1000;
    await harness.services.inbox.accept({
      channel: 'whatsapp',
      conversationKey: customer,
      messageId: 'late-1',
      from: { address: customer },
      text: 'Are you open on Sundays?',
      receivedAt,
      metadata: {},
    });
    await enqueueTurn(harness.services.queue, { conversationKey: customer, messageId: 'late-1' });
    const [late] = await eventually(() => (to(customer).length > 0 ? to(customer) : undefined));
    expect(late).toMatchObject({ contentSid: LATE_TEMPLATE });
    expect(JSON.parse(late!.contentVariables!)).toEqual({ '1': 'Happy to help: Are you open on Sundays?' });
  });

  test('admin API: lists taken hand-offs, takes over, refuses a second taker, hands back; bad input is a 4xx with a log line', async () => {
    const customer = 'whatsapp:+447700912008';
    const { handoff } = await handOff(customer, 'a demo would be great', [ANA, BEN]);
    const admin = (path: string) => harness.http.post(path).set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    const take = await admin(`/admin/handoffs/${handoff._id}/take`).send({ name: 'Olga' });
    expect(take.status).toBe(200);
    expect(take.body).toMatchObject({ outcome: 'taken', handoff: { status: 'taken', takenBy: { id: 'admin:Olga', name: 'Olga', via: 'admin' } } });
    await eventually(() => bodiesTo(BEN).includes(`Olga took this: Maya — Demo of the Pro plan (#${handoff.shortCode}).`) || undefined);

    const second = await admin(`/admin/handoffs/${handoff._id}/take`).send({ name: 'Pia' });
    expect(second.status).toBe(409);
    expect(second.body.error).toBe('Olga is handling this hand-off');
    // A teammate's reply now is told who is handling it.
    expect((await harness.sendWhatsapp({ from: ANA, body: `#${handoff.shortCode} hi` })).text).toContain('Olga is handling this');

    const listed = await harness.http.get('/admin/handoffs?status=taken').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(listed.body.handoffs.map((entry: { _id: string }) => entry._id)).toContain(handoff._id);

    expect((await admin(`/admin/handoffs/${handoff._id}/hand-back`).send({ name: 'Olga' })).status).toBe(200);
    await eventually(
      () => bodiesTo(customer).includes("You're back with our assistant. Olga from the Sales team has handed this conversation back.") || undefined,
    );
    expect((await admin(`/admin/handoffs/${handoff._id}/close`).send({ name: 'Olga' })).status).toBe(409);

    const badId = await admin('/admin/handoffs/nope/take').send({ name: 'Olga' });
    expect(badId.status).toBe(400);
    const noName = await admin(`/admin/handoffs/${handoff._id}/take`).send({});
    expect(noName.status).toBe(400);
    expect(noName.body.issues[0]).toMatchObject({ path: 'name' });
    const unknown = await admin('/admin/handoffs/ho_00000000000000000000/close').send({ name: 'Olga' });
    expect(unknown.status).toBe(404);
    expect(harness.logs.filter((line) => line.event === 'admin-request-rejected').map((line) => line.reason)).toEqual(
      expect.arrayContaining(['held', 'wrong_status', 'invalid_handoff_id', 'invalid_request', 'unknown_handoff']),
    );
  });
});

describe('idle takeover', () => {
  let receiver: Receiver;
  let harness: Harness;
  const { bodiesTo, handOff, refreshed } = helpers(() => harness);

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    // 0.02 minutes: 1.2 s without a teammate message hands back.
    harness = await start(receiver, { TAKEOVER_IDLE_MINUTES: '0.02' });
  });
  afterAll(async () => {
    if (process.env.TAKEOVER_DEBUG) appendFileSync(process.env.TAKEOVER_DEBUG, harness.logs.map((line) => JSON.stringify(line)).join('\n'));
    await harness.close();
    await receiver.close();
  });

  test('a takeover with no teammate message for TAKEOVER_IDLE_MINUTES hands back by itself, telling customer and teammate', async () => {
    const customer = 'whatsapp:+447700912009';
    const { handoff, noticeTo } = await handOff(customer, 'a demo, please', [ANA, BEN]);
    await harness.sendWhatsapp({ from: ANA, body: 'Ana here, one moment', repliedTo: noticeTo(ANA) });
    await eventually(() => bodiesTo(customer).includes('Ana (Sales team): Ana here, one moment') || undefined);
    await eventually(
      () => bodiesTo(customer).includes('Ana from the Sales team is no longer in this chat, so our assistant is back to help you.') || undefined,
    );
    await eventually(
      () =>
        bodiesTo(ANA).includes(
          `No message from you for 1 second: the conversation with Maya (#${handoff.shortCode}) went back to the assistant. The customer was told.`,
        ) || undefined,
    );
    expect(await refreshed(handoff._id)).toMatchObject({ status: 'handed_back', endReason: 'idle', endedBy: { id: 'system:idle' } });
    // The assistant answers the next message.
    await harness.sendWhatsapp({ from: customer, body: 'hello again' });
    await eventually(() => bodiesTo(customer).includes('Happy to help: hello again') || undefined);
  });

  test('the idle hand-back fires while a customer message waits: the customer is told before the assistant answers it', async () => {
    const customer = 'whatsapp:+447700912014';
    const { handoff, noticeTo } = await handOff(customer, 'a demo, please', [ANA, BEN]);
    const before = bodiesTo(customer).length;
    const back = 'Ana from the Sales team is no longer in this chat, so our assistant is back to help you.';
    // The worker is paused: Ana's message and the customer's wait in the inbox while the idle hand-back fires.
    const worker = harness.worker!;
    await worker.pause();
    try {
      expect((await harness.sendWhatsapp({ from: ANA, body: 'Ana here, let me check', repliedTo: noticeTo(ANA) })).status).toBe(200);
      expect((await harness.sendWhatsapp({ from: customer, body: 'take your time' })).status).toBe(200);
      await eventually(async () => (await refreshed(handoff._id)).status === 'handed_back' || undefined, 20_000);
    } finally {
      worker.resume();
    }
    await eventually(() => bodiesTo(customer).length >= before + 3 || undefined, 20_000);
    await turnsSettled(harness.services);
    expect(bodiesTo(customer).slice(before)).toEqual(['Ana (Sales team): Ana here, let me check', back, 'Happy to help: take your time']);
    await transcriptsWritten(harness.services);
    const stored = (await harness.services.transcripts.conversationMessages(customer)).map((message) => message.text);
    expect(stored.indexOf('Happy to help: take your time')).toBeGreaterThan(stored.indexOf(back));
    expect(stored.indexOf(back)).toBeGreaterThan(stored.indexOf('Ana here, let me check'));
  });
});
