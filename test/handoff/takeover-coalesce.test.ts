/**
 * Takeover with burst coalescing on (a short quiet period): the integration rules the takeover
 * and coalescing suites each run without (both use COALESCE_MS=0 there). A takeover entry (a
 * teammate's message, a hand-back) is never coalesced with customer messages, so customer
 * messages queued behind a hand-back are answered by the assistant, and a teammate's message in
 * the middle of a burst reaches the customer while every customer message around it is relayed;
 * while a person holds the conversation every message of a coalesced batch is relayed to them
 * and the model is never called. The turn worker is paused while a burst is sent, so the whole
 * burst waits in the inbox and the batches do not depend on the machine's speed.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Script } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { handoffsSettled, transcriptsWritten, turnsSettled } from '../support/settled.js';

const ANA = 'whatsapp:+34600913001';
const BEN = 'whatsapp:+34600913002';

/** The model: hands off to sales on "demo"; otherwise answers the customer's latest words. */
const assistant: Script = (call) => {
  if (call.toolResults.length > 0) return { text: 'Done. The team will contact you here on WhatsApp.' };
  if (/demo/i.test(call.userText) && call.toolNames.includes('book_sales_call')) {
    return { toolCalls: [{ name: 'book_sales_call', input: { reason: 'Demo of the Pro plan' } }] };
  }
  return { text: `Happy to help: ${call.userText}` };
};

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness({
    script: assistant,
    env: {
      COALESCE_MS: '300',
      HANDOFF_TEAMS: JSON.stringify({
        sales: {
          label: 'Sales team',
          members: [
            { name: 'Ana', whatsapp: ANA },
            { name: 'Ben', whatsapp: BEN },
          ],
        },
      }),
      NOTICE_BACKOFF_MS: '20',
    },
  });
});
afterAll(() => harness.close());

const bodiesTo = (address: string) => harness.twilio.messages.filter((message) => message.to === address).map((message) => message.body);
/** What Ana got relayed from the conversation of the hand-off with this short code ("Customer: …\n#<code>"), first lines. */
const relaysTo = (member: string, shortCode: string | undefined) =>
  bodiesTo(member)
    .filter((body) => body.startsWith('Customer: ') && body.endsWith(`\n#${shortCode}`))
    .map((body) => body.split('\n')[0]);
const coalesced = () => harness.services.metrics.value('inbound_coalesced_total', { channel: 'whatsapp' });

/** The customer asks for a demo; resolves once Ana has the notice and the assistant's answer is out. */
async function handOff(customer: string) {
  await harness.sendWhatsapp({ from: customer, body: 'I would like a demo of the Pro plan', profileName: 'Maya' });
  const notice = await eventually(() =>
    harness.twilio.messages.find((message) => message.to === ANA && message.body.includes(customer.replace('whatsapp:', ''))),
  );
  await handoffsSettled(harness.services);
  const handoff = (await harness.services.handoffs.list({ limit: 20 })).find((entry) => entry.customer.address === customer);
  if (!handoff) throw new Error('hand-off not found');
  return { handoff, notice };
}

/** Sends `send` while the turn worker is paused, so all of it waits in the inbox; then lets the worker run. */
async function whilePaused(send: () => Promise<void>) {
  const worker = harness.worker!;
  await worker.pause();
  try {
    await send();
  } finally {
    worker.resume();
  }
}

async function customerSays(customer: string, ...texts: string[]) {
  for (const body of texts) expect((await harness.sendWhatsapp({ from: customer, body })).status).toBe(200);
}

describe('coalescing and takeover', () => {
  test('a burst around a teammate reply: the reply reaches the customer, every customer message is relayed, the model is never called', async () => {
    const customer = 'whatsapp:+447700913001';
    const { handoff, notice } = await handOff(customer);
    const before = bodiesTo(customer).length;
    const modelCalls = harness.models.calls.length;
    const coalescedBefore = coalesced();

    await whilePaused(async () => {
      await customerSays(customer, 'are you there?', 'hello?');
      expect((await harness.sendWhatsapp({ from: ANA, body: 'Hi Maya, Ana here. When suits you?', repliedTo: notice.sid })).status).toBe(200);
      await customerSays(customer, 'oh hi Ana', 'tomorrow at 10');
    });

    await eventually(() => relaysTo(ANA, handoff.shortCode).length >= 4 || undefined, 20_000);
    await eventually(() => bodiesTo(customer).length > before || undefined);
    await turnsSettled(harness.services);

    expect(bodiesTo(customer).slice(before)).toEqual(['Ana (Sales team): Hi Maya, Ana here. When suits you?']);
    expect(relaysTo(ANA, handoff.shortCode)).toEqual(['Customer: are you there?', 'Customer: hello?', 'Customer: oh hi Ana', 'Customer: tomorrow at 10']);
    expect(harness.models.calls.length).toBe(modelCalls);
    // Two batches of two customer messages, and the teammate's message a batch of its own.
    expect(coalesced() - coalescedBefore).toBe(2);

    await transcriptsWritten(harness.services);
    // Each customer message recorded once, in order; the teammate's message recorded as sent by her
    // (MongoDB orders by time: it reached the customer after the whole burst had arrived).
    const stored = await harness.services.transcripts.conversationMessages(customer);
    expect(
      stored
        .filter((message) => message.direction === 'inbound')
        .slice(-4)
        .map((message) => [message.text, message.status]),
    ).toEqual([
      ['are you there?', 'received'],
      ['hello?', 'received'],
      ['oh hi Ana', 'received'],
      ['tomorrow at 10', 'received'],
    ]);
    expect(stored.filter((message) => message.text === 'Hi Maya, Ana here. When suits you?')).toEqual([
      expect.objectContaining({ direction: 'outbound', roleId: 'teammate:Ana', status: 'queued' }),
    ]);
  }, 60_000);

  test('while a person holds the conversation, every message of a coalesced batch is relayed to them and the model is never called', async () => {
    const customer = 'whatsapp:+447700913002';
    const { handoff, notice } = await handOff(customer);
    await harness.sendWhatsapp({ from: ANA, body: 'Ana here, how can I help?', repliedTo: notice.sid });
    await eventually(() => bodiesTo(customer).includes('Ana (Sales team): Ana here, how can I help?') || undefined);
    await turnsSettled(harness.services);
    const before = bodiesTo(customer).length;
    const modelCalls = harness.models.calls.length;
    const coalescedBefore = coalesced();

    await whilePaused(() => customerSays(customer, 'hi', 'I need', 'a quote for 12 seats'));

    await eventually(() => relaysTo(ANA, handoff.shortCode).length >= 3 || undefined, 20_000);
    await turnsSettled(harness.services);
    expect(relaysTo(ANA, handoff.shortCode)).toEqual(['Customer: hi', 'Customer: I need', 'Customer: a quote for 12 seats']);
    // One batch of three, and nothing reached the model or the customer.
    expect(coalesced() - coalescedBefore).toBe(2);
    expect(harness.models.calls.length).toBe(modelCalls);
    expect(bodiesTo(customer)).toHaveLength(before);
    // Ben, who does not hold it, is told nothing of them.
    expect(bodiesTo(BEN).filter((body) => body.startsWith('Customer: '))).toEqual([]);

    await transcriptsWritten(harness.services);
    const inbound = (await harness.services.transcripts.conversationMessages(customer)).filter((message) => message.direction === 'inbound');
    expect(inbound.slice(-3).map((message) => [message.text, message.status])).toEqual([
      ['hi', 'received'],
      ['I need', 'received'],
      ['a quote for 12 seats', 'received'],
    ]);
  }, 60_000);

  test('a burst behind a hand-back is answered by the assistant, after the customer is told, with one reply that saw the whole burst', async () => {
    const customer = 'whatsapp:+447700913003';
    const { handoff, notice } = await handOff(customer);
    await harness.sendWhatsapp({ from: ANA, body: 'Ana here, all sorted?', repliedTo: notice.sid });
    await eventually(() => bodiesTo(customer).includes('Ana (Sales team): Ana here, all sorted?') || undefined);
    await turnsSettled(harness.services);
    const before = bodiesTo(customer).length;

    await whilePaused(async () => {
      expect((await harness.sendWhatsapp({ from: ANA, body: `#${handoff.shortCode} #done` })).status).toBe(200);
      await customerSays(customer, 'thanks Ana', 'one more thing', 'what do invoices cost?');
    });

    await eventually(() => bodiesTo(customer).length >= before + 2 || undefined, 20_000);
    await turnsSettled(harness.services);
    expect(bodiesTo(customer).slice(before)).toEqual([
      "You're back with our assistant. Ana from the Sales team has handed this conversation back.",
      'Happy to help: what do invoices cost?',
    ]);
    const reply = harness.models.replyCalls().filter((call) => call.userMessages.includes('what do invoices cost?'));
    expect(reply).toHaveLength(1);
    expect(reply[0]!.userMessages.filter((text) => !text.startsWith('<customer-context>')).slice(-3)).toEqual([
      'thanks Ana',
      'one more thing',
      'what do invoices cost?',
    ]);
    // None of them was relayed: Ana had handed the conversation back.
    expect(relaysTo(ANA, handoff.shortCode)).toEqual([]);
  }, 60_000);

  test('customer messages waiting when #done arrives: the customer is told first, then the assistant answers them in one turn that knows', async () => {
    const customer = 'whatsapp:+447700913004';
    const { handoff, notice } = await handOff(customer);
    await harness.sendWhatsapp({ from: ANA, body: 'Ana here, anything else?', repliedTo: notice.sid });
    await eventually(() => bodiesTo(customer).includes('Ana (Sales team): Ana here, anything else?') || undefined);
    await turnsSettled(harness.services);
    const before = bodiesTo(customer).length;

    // The customer's messages are in the inbox, not yet answered, when Ana hands back.
    await whilePaused(async () => {
      await customerSays(customer, 'no that is all', 'actually, what do invoices cost?');
      expect((await harness.sendWhatsapp({ from: ANA, body: `#${handoff.shortCode} #done` })).status).toBe(200);
    });

    await eventually(() => bodiesTo(customer).length >= before + 2 || undefined, 20_000);
    await turnsSettled(harness.services);
    const back = "You're back with our assistant. Ana from the Sales team has handed this conversation back.";
    expect(bodiesTo(customer).slice(before)).toEqual([back, 'Happy to help: actually, what do invoices cost?']);
    // One turn for both, and it saw the hand-back: the summary and what the customer was told.
    const reply = harness.models.replyCalls().filter((call) => call.userMessages.includes('actually, what do invoices cost?'));
    expect(reply).toHaveLength(1);
    expect(reply[0]!.userMessages.filter((text) => !text.startsWith('<customer-context>')).slice(-2)).toEqual([
      'no that is all',
      'actually, what do invoices cost?',
    ]);
    expect(reply[0]!.promptText).toContain('(Summary: Ana of the Sales team answered the customer in person');
    expect(reply[0]!.promptText).toContain(back);
    // Neither was relayed to Ana: she had handed back before they were handled.
    expect(relaysTo(ANA, handoff.shortCode)).toEqual([]);
    expect(bodiesTo(ANA)).toContain(`Handed back to the assistant: Maya (#${handoff.shortCode}). The customer was told.`);

    // MongoDB: both messages recorded once, the hand-back message before the assistant's reply.
    await transcriptsWritten(harness.services);
    const stored = (await harness.services.transcripts.conversationMessages(customer)).map((message) => message.text);
    const at = (text: string) => stored.indexOf(text);
    expect(stored.filter((text) => text === 'no that is all' || text === 'actually, what do invoices cost?')).toHaveLength(2);
    expect(at(back)).toBeGreaterThan(at('Ana here, anything else?'));
    expect(at('Happy to help: actually, what do invoices cost?')).toBeGreaterThan(at(back));
  }, 60_000);

  test('a takeover that starts while a batch is handled: every message of the batch has one fate (here: answered), none is lost', async () => {
    const customer = 'whatsapp:+447700913006';
    const { handoff, notice } = await handOff(customer);
    const before = bodiesTo(customer).length;
    // Ana takes the conversation right after the worker first reads its takeover state for this
    // batch: between the reads of its two messages, when each message was read on its own.
    const redis = harness.services.redis;
    const hgetall = redis.hgetall.bind(redis);
    const takeoverKey = `asst:takeover:{${customer}}`;
    let taken: Promise<unknown> | undefined;
    redis.hgetall = (async (...args: Parameters<typeof hgetall>) => {
      const read = await hgetall(...args);
      if (!taken && args[0] === takeoverKey) {
        taken = harness.sendWhatsapp({ from: ANA, body: 'Ana here, I can help with that', repliedTo: notice.sid });
        await taken;
      }
      return read;
    }) as typeof redis.hgetall;
    try {
      await whilePaused(() => customerSays(customer, 'first part', 'second part'));
      await eventually(() => taken, 20_000);
      await eventually(() => bodiesTo(customer).includes('Ana (Sales team): Ana here, I can help with that') || undefined, 20_000);
      await turnsSettled(harness.services);
    } finally {
      redis.hgetall = hgetall;
    }

    // Read once for the batch: both came before the takeover, so the assistant answers both in one turn.
    expect(bodiesTo(customer).slice(before)).toEqual(['Happy to help: second part', 'Ana (Sales team): Ana here, I can help with that']);
    expect(relaysTo(ANA, handoff.shortCode)).toEqual([]);
    await transcriptsWritten(harness.services);
    const inbound = (await harness.services.transcripts.conversationMessages(customer)).filter((message) => message.direction === 'inbound');
    expect(inbound.map((message) => message.text).filter((text) => text.endsWith(' part'))).toEqual(['first part', 'second part']);
  }, 60_000);

  test("a customer message between the teammate's last messages is theirs (relayed); #done goes after her last message and ahead of the rest", async () => {
    const customer = 'whatsapp:+447700913005';
    const { handoff, notice } = await handOff(customer);
    await harness.sendWhatsapp({ from: ANA, body: 'Ana here, booking your demo', repliedTo: notice.sid });
    await eventually(() => bodiesTo(customer).includes('Ana (Sales team): Ana here, booking your demo') || undefined);
    await turnsSettled(harness.services);
    const before = bodiesTo(customer).length;

    await whilePaused(async () => {
      await customerSays(customer, 'is 10am ok?');
      expect((await harness.sendWhatsapp({ from: ANA, body: `#${handoff.shortCode} Yes, 10am is booked. Bye!` })).status).toBe(200);
      await customerSays(customer, 'great, and do you do invoices?');
      expect((await harness.sendWhatsapp({ from: ANA, body: `#${handoff.shortCode} #done` })).status).toBe(200);
    });

    await eventually(() => bodiesTo(customer).length >= before + 3 || undefined, 20_000);
    await turnsSettled(harness.services);
    expect(bodiesTo(customer).slice(before)).toEqual([
      'Ana (Sales team): Yes, 10am is booked. Bye!',
      "You're back with our assistant. Ana from the Sales team has handed this conversation back.",
      'Happy to help: great, and do you do invoices?',
    ]);
    // The message Ana answered was hers: relayed to her, never to the model.
    expect(relaysTo(ANA, handoff.shortCode)).toEqual(['Customer: is 10am ok?']);
    // (the assistant's one turn after the hand-back has it in its history, as it has Ana's answer)
    expect(
      harness.models
        .replyCalls()
        .filter((call) => call.userMessages.includes('is 10am ok?'))
        .map((call) => call.userMessages.at(-1)),
    ).toEqual(['great, and do you do invoices?']);
    const reply = harness.models.replyCalls().filter((call) => call.userMessages.includes('great, and do you do invoices?'));
    expect(reply).toHaveLength(1);
    expect(reply[0]!.promptText).toContain('[Ana, Sales team] Yes, 10am is booked. Bye!');

    await transcriptsWritten(harness.services);
    const stored = (await harness.services.transcripts.conversationMessages(customer)).map((message) => message.text);
    const order = ['is 10am ok?', 'Yes, 10am is booked. Bye!', "You're back with our assistant. Ana from the Sales team has handed this conversation back."];
    expect(order.map((text) => stored.indexOf(text))).toEqual([...order.map((text) => stored.indexOf(text))].sort((a, b) => a - b));
    expect(stored.indexOf('Happy to help: great, and do you do invoices?')).toBeGreaterThan(stored.indexOf(order[2]!));
  }, 60_000);
});
