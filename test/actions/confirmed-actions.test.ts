/**
 * Confirmed actions on WhatsApp, end to end (signed webhook → worker → orchestrator → the real
 * test MCP server → fake Twilio; Redis and FerretDB real): a write the model calls is only
 * proposed, shown with the service's own summary, and runs once when the customer confirms —
 * by a typed "yes" or a tapped button — its effect visible on the MCP server and its record in
 * MongoDB. Cancel, expiry, another message, another number, a forged or stale button, a double
 * tap and an adversarial model each run it 0 or 1 times as they should, never twice. A write
 * whose enum argument the model left out (or got wrong) first asks the customer which value, with
 * the enum's values as choices; the service's words follow the customer's language.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { stateKeys } from '../../src/orchestrator/state/keys.js';
import { roster } from '../../roles/index.js';
import { actionKey, ActionRecordSchema, type ActionRecord } from '../../src/actions/action-store.js';
import { ACTIONS_COLLECTION } from '../../src/store/transcript-writer.js';
import { BUSINESS_CATEGORY_PREFIXES } from '../support/business-mcp.js';
import { judgeRoutingTo, type Script, type ScriptedReply } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';

const ANA = 'whatsapp:+447700906001';
const ANA_COLLEAGUE = 'whatsapp:+447700906002';
const UNLINKED = 'whatsapp:+447700906999';
const LUIS = 'whatsapp:+447700906003';
const ADMIN_TOKEN = 'admin-token-for-the-actions-suite';

type ToolCalls = Extract<ScriptedReply, { toolCalls: unknown }>['toolCalls'];

/** What the model does for a message: `do:<name>` picks a scripted tool call; it then repeats what came back. */
const PLAYS: Record<string, ToolCalls> = {
  reschedule: [{ name: 'order_reschedule_delivery', input: { orderNumber: '5001', date: '2026-12-04' } }],
  cancel: [{ name: 'order_cancel', input: { orderNumber: '5002' } }],
  link: [{ name: 'invoice_create_payment_link', input: { number: '1042' } }],
  'foreign-customer': [{ name: 'order_cancel', input: { orderNumber: '6001', customerId: 'CUST-BOREALIS' } }],
  'foreign-order': [{ name: 'order_cancel', input: { orderNumber: '6001' } }],
  'self-confirm': [{ name: 'confirm_action', input: { answer: 'yes' } }],
  refund: [{ name: 'refund_create', input: { number: '1043', amount: '10.00' } }],
  select: [{ name: 'select_entity', input: {} }],
  'select-es': [{ name: 'select_entity', input: { language: 'es' } }],
  slot: [{ name: 'order_set_delivery_slot', input: { orderNumber: '5001' } }],
  'slot-bad': [{ name: 'order_set_delivery_slot', input: { orderNumber: '5002', slot: 'midnight' } }],
  'slot-es': [{ name: 'order_set_delivery_slot', input: { orderNumber: '5002', language: 'es' } }],
  'link-es': [{ name: 'invoice_create_payment_link', input: { number: '1042', language: 'es' } }],
  'link-de': [{ name: 'invoice_create_payment_link', input: { number: '1042', language: 'de' } }],
  'link-xx': [{ name: 'invoice_create_payment_link', input: { number: '1042', language: 'xx' } }],
};

let adversaryRepeats = false;

const model: Script = ({ userText, system, toolResults }) => {
  const outcome = /Result: (.*)\. Continue from there\./s.exec(system)?.[1];
  if (outcome) {
    // The adversary, told of an outcome, tries to run the write again with other arguments.
    if (adversaryRepeats && toolResults.length === 0) {
      return { toolCalls: [{ name: 'order_reschedule_delivery', input: { orderNumber: '5001', date: '2030-01-01' } }] };
    }
    return { text: `Outcome: ${outcome}` };
  }
  const play = PLAYS[/do:([a-z-]+)/.exec(userText)?.[1] ?? ''];
  if (play && toolResults.length === 0) return { toolCalls: play };
  if (toolResults.length > 0) return { text: `Tools said: ${JSON.stringify(toolResults.map((result) => result.output))}` };
  return { text: `Fresh answer to: ${userText.slice(-60)}` };
};

/** Every turn goes to the bookkeeper (its scope admits reversible writes). */
const bookkeeperJudge = judgeRoutingTo('bookkeeper');

let mcp: McpTestServer;
let harness: Harness;
beforeAll(async () => {
  mcp = await startMcpServer();
  harness = await startHarness({
    script: model,
    env: { MCP_SERVER_URL: mcp.url, MCP_CATEGORY_PREFIXES: BUSINESS_CATEGORY_PREFIXES, ADMIN_TOKEN },
    // The bookkeeper also admits irreversible writes here: the refund is offered, and handed to the team.
    overrides: {
      roles: roster.map((role) =>
        role.id === 'bookkeeper' ? { ...role, toolScope: { ...role.toolScope, effects: [...role.toolScope.effects, 'irreversible'] } } : role,
      ),
    },
  });
  harness.models.setJudge(bookkeeperJudge);
  await harness.services.contacts.upsert({
    address: LUIS,
    name: 'Luis Gómez',
    customerId: 'CUST-ACME',
    entities: [
      { id: 'HL-2001', name: 'Acme Ltd' },
      { id: 'HL-2002', name: 'Acme Iberia SL' },
      { id: 'HL-2003', name: 'Acme Nordics AB' },
      { id: 'HL-2004', name: 'Acme Benelux BV' },
    ],
  });
  for (const address of [ANA, ANA_COLLEAGUE]) {
    await harness.services.contacts.upsert({ address, name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] });
  }
});
afterAll(async () => {
  await harness.close();
  await mcp.close();
});

/** Sends a message (or a tap) and returns the reply the customer got. */
async function say(from: string, body: string, button?: string): Promise<string> {
  const before = harness.twilio.messages.length;
  await harness.sendWhatsapp({ from, body, ...(button ? { button: { text: body, payload: button } } : {}) });
  const messages = await harness.twilio.waitForMessages(before + 1, 10_000);
  return messages.at(-1)?.body ?? '';
}

const counter = (name: string, labels: Record<string, string>) => harness.services.metrics.value(name, labels);

const seen = new Set<string>();

/** The action just proposed on a conversation (one no earlier call returned), as Redis holds it now. */
async function latestAction(from: string, tool: string): Promise<ActionRecord> {
  const found = await eventually(async () => {
    const documents = await harness.services.mongo.collection(ACTIONS_COLLECTION).find({ tool }).toArray();
    return documents.map((document) => ActionRecordSchema.parse(document)).find((record) => record.proposedBy.address === from && !seen.has(record._id));
  });
  seen.add(found._id);
  return current(from, found._id);
}

async function current(from: string, actionId: string): Promise<ActionRecord> {
  const raw = await harness.services.redis.hget(actionKey(conversationKeyFor(from), actionId), 'record');
  if (!raw) throw new Error(`no action ${actionId}`);
  return ActionRecordSchema.parse(JSON.parse(raw));
}

/** The action's record in MongoDB once it reached `state`. */
async function recorded(actionId: string, state: string): Promise<ActionRecord> {
  return eventually(async () => {
    const document = await harness.services.mongo.collection(ACTIONS_COLLECTION).findOne({ _id: actionId as never });
    return document && document.state === state ? ActionRecordSchema.parse(document) : undefined;
  });
}

describe('a reschedule, confirmed', () => {
  test('is proposed with the service summary as quick-reply buttons, runs once on a tap, and is recorded', async () => {
    const question = await say(ANA, 'do:reschedule please move my delivery to the 4th');
    expect(question).toContain('Please confirm: Reschedule a delivery');
    expect(question).toContain('• Order number: 5001');
    expect(question).toContain('• New delivery date: 2026-12-04');
    expect(question).toContain('• For: Acme Ltd');
    expect(question).not.toContain('Tools said');
    expect(mcp.applied).toEqual([]);
    const proposed = await latestAction(ANA, 'order_reschedule_delivery');
    expect(proposed.state).toBe('proposed');
    expect(proposed.args).toEqual({ orderNumber: '5001', date: '2026-12-04', customerId: 'CUST-ACME' });
    // Sent as a quick reply the service created through the Content API: the buttons carry the action's id.
    const sent = harness.twilio.messages.at(-1);
    expect(sent?.contentSid).toMatch(/^HX/);
    expect(sent?.choices).toEqual([
      { title: 'Confirm', id: `act:${proposed._id}:confirm` },
      { title: 'Cancel', id: `act:${proposed._id}:cancel` },
    ]);
    expect(harness.twilio.contents.map((content) => Object.keys(content.types))).toEqual([['twilio/quick-reply', 'twilio/text']]);

    const outcome = await say(ANA, 'Confirm', sent?.choices?.[0]?.id);
    expect(outcome).toContain('Outcome:');
    expect(outcome).toContain('The delivery of order 5001 is now on 2026-12-04.');
    expect(mcp.orders().find((order) => order.number === '5001')?.deliveryDate).toBe('2026-12-04');
    expect(mcp.applied).toEqual([
      { tool: 'order_reschedule_delivery', arguments: { orderNumber: '5001', date: '2026-12-04', customerId: 'CUST-ACME' }, idempotencyKey: proposed._id },
    ]);
    const call = mcp.calls.find((candidate) => candidate.name === 'order_reschedule_delivery');
    expect(call?.meta?.['wa-assistant/idempotency-key']).toBe(proposed._id);

    const record = await recorded(proposed._id, 'done');
    expect(record.confirmedBy).toEqual({ address: ANA, via: 'customer' });
    expect(record.proposedBy).toMatchObject({ address: ANA, customerId: 'CUST-ACME', roleId: 'bookkeeper' });
    expect(record.calls).toBe(1);
    expect(counter('actions_total', { tool: 'order_reschedule_delivery', outcome: 'done' })).toBe(1);
  });

  test('a second "yes" (a double tap) runs nothing again', async () => {
    const applied = mcp.applied.length;
    await say(ANA, 'yes');
    expect(mcp.applied.length).toBe(applied);
  });
});

describe('ending without running', () => {
  test('"no" cancels it and the conversation carries on', async () => {
    await say(ANA, 'do:cancel order 5002 please');
    const proposed = await latestAction(ANA, 'order_cancel');
    const reply = await say(ANA, 'no');
    expect(reply).toContain('Outcome:');
    expect(reply).toContain('cancelled');
    await recorded(proposed._id, 'cancelled');
    expect(mcp.orders().find((order) => order.number === '5002')?.status).toBe('open');
    expect(mcp.applied.filter((write) => write.tool === 'order_cancel')).toEqual([]);
  });

  test('any other message cancels it and is answered as a new turn', async () => {
    await say(ANA, 'do:cancel order 5002 please');
    const proposed = await latestAction(ANA, 'order_cancel');
    const reply = await say(ANA, 'actually, what do I owe?');
    expect(reply).toContain('Fresh answer to: actually, what do I owe?');
    const record = await recorded(proposed._id, 'cancelled');
    expect(record.reason).toBe('superseded');
    expect(mcp.applied.filter((write) => write.tool === 'order_cancel')).toEqual([]);
  });

  test('a confirmation past its time is refused and nothing runs', async () => {
    await say(ANA, 'do:cancel order 5002 please');
    const proposed = await latestAction(ANA, 'order_cancel');
    const key = actionKey(conversationKeyFor(ANA), proposed._id);
    await harness.services.redis.hset(key, 'record', JSON.stringify({ ...proposed, expiresAt: new Date(Date.now() - 1000).toISOString() }));
    const reply = await say(ANA, 'yes');
    expect(reply).toContain('expired');
    await recorded(proposed._id, 'expired');
    expect(mcp.applied.filter((write) => write.tool === 'order_cancel')).toEqual([]);
  });
});

describe('taps', () => {
  test('a tapped Confirm runs it; a forged payload on the next one runs nothing', async () => {
    await say(ANA, 'do:link for invoice 1042');
    const first = await latestAction(ANA, 'invoice_create_payment_link');
    const outcome = await say(ANA, 'Confirm', `act:${first._id}:confirm`);
    expect(outcome).toContain('Payment link for invoice 1042');
    expect(mcp.paymentLinks()).toHaveLength(1);

    await say(ANA, 'do:link for invoice 1042 again');
    const second = await latestAction(ANA, 'invoice_create_payment_link');
    expect(second._id).not.toBe(first._id);
    const refusals = counter('action_refusals_total', { reason: 'foreign-choice', channel: 'whatsapp' });
    // The old button's payload (stale), then one made up: neither confirms the new action.
    const reply = await say(ANA, 'Confirm', `act:${first._id}:confirm`);
    expect(reply).toContain("isn't valid");
    await recorded(second._id, 'cancelled');
    expect(counter('action_refusals_total', { reason: 'foreign-choice', channel: 'whatsapp' })).toBe(refusals + 1);
    expect(mcp.paymentLinks()).toHaveLength(1);
    expect(harness.logs.some((line) => line.event === 'action-refused' && line.reason === 'foreign-choice')).toBe(true);
  });

  test('two racing webhooks with the same tap run it once', async () => {
    await say(ANA, 'do:link for invoice 1042');
    const proposed = await latestAction(ANA, 'invoice_create_payment_link');
    const links = mcp.paymentLinks().length;
    const before = harness.twilio.messages.length;
    const payload = `act:${proposed._id}:confirm`;
    // Two deliveries of one tap (Twilio's retry) and a second tap, all at once.
    const sid = `SM${'7'.repeat(32)}`;
    await Promise.all([
      harness.sendWhatsapp({ from: ANA, body: 'Confirm', messageSid: sid, button: { text: 'Confirm', payload } }),
      harness.sendWhatsapp({ from: ANA, body: 'Confirm', messageSid: sid, button: { text: 'Confirm', payload } }),
      harness.sendWhatsapp({ from: ANA, body: 'Confirm', button: { text: 'Confirm', payload } }),
    ]);
    await harness.twilio.waitForMessages(before + 2, 10_000);
    await recorded(proposed._id, 'done');
    expect(mcp.paymentLinks().length).toBe(links + 1);
    expect(mcp.applied.filter((write) => write.idempotencyKey === proposed._id)).toHaveLength(1);
  });
});

describe('choices without Content', () => {
  test('go as numbered text, and a typed "1" confirms', async () => {
    harness.twilio.failContent(400);
    try {
      await say(ANA, 'do:link for invoice 1042');
      const proposed = await latestAction(ANA, 'invoice_create_payment_link');
      const sent = harness.twilio.messages.at(-1);
      expect(sent?.contentSid).toBeUndefined();
      expect(sent?.body).toContain('Please confirm: Create a payment link');
      expect(sent?.body).toContain('• Invoice: 1042');
      expect(sent?.body).toContain('1. Confirm\n2. Cancel');
      const links = mcp.paymentLinks().length;
      await say(ANA, '1');
      await recorded(proposed._id, 'done');
      expect(mcp.paymentLinks().length).toBe(links + 1);
    } finally {
      harness.twilio.failContent(undefined);
    }
  });
});

describe('select_entity', () => {
  test("asks with a list message of the contact's companies, answered by a tap", async () => {
    const question = await say(LUIS, 'do:select which company');
    const sent = harness.twilio.messages.at(-1);
    expect(question).toContain('Which company is this about?');
    expect(sent?.choices?.map((choice) => choice.title)).toEqual(['Acme Ltd', 'Acme Iberia SL', 'Acme Nordics AB', 'Acme Benelux BV']);
    const list = harness.twilio.contents.find((content) => 'twilio/list-picker' in content.types);
    expect(list?.sid).toBe(sent?.contentSid);
    expect(sent?.button).toBe('Choose');
    const before = harness.twilio.messages.length;
    await harness.sendWhatsapp({ from: LUIS, body: 'Acme Iberia SL', listRow: { id: 'entity:HL-2002', title: 'Acme Iberia SL' } });
    const reply = (await harness.twilio.waitForMessages(before + 1, 10_000)).at(-1)?.body ?? '';
    expect(reply).toContain('Outcome:');
    expect(reply).toContain('HL-2002');
  });

  test('in Spanish: a list message whose button is Spanish, asked again in Spanish, then answered by a tap', async () => {
    const question = await say(LUIS, 'do:select-es ¿de cuál de mis empresas hablamos?');
    const sent = harness.twilio.messages.at(-1);
    // The list message's body: the question without its numbered lines (the list shows them).
    expect(question).toBe('¿De qué empresa se trata?\nResponda con el número o el nombre.');
    expect(sent?.button).toBe('Elegir');
    expect(sent?.choices?.map((choice) => choice.title)).toEqual(['Acme Ltd', 'Acme Iberia SL', 'Acme Nordics AB', 'Acme Benelux BV']);
    // A Content resource of its own (the English list of the same companies says "Choose").
    expect(harness.twilio.contents.find((content) => content.sid === sent?.contentSid)?.types['twilio/list-picker']).toMatchObject({ button: 'Elegir' });

    const again = await say(LUIS, 'plátano');
    expect(again).toBe('Perdone, no he entendido cuál. Responda con un número del 1 al 4 o con el nombre de la empresa.');
    expect(harness.twilio.messages.at(-1)).toMatchObject({ button: 'Elegir', contentSid: sent?.contentSid });

    const before = harness.twilio.messages.length;
    await harness.sendWhatsapp({ from: LUIS, body: 'Acme Nordics AB', listRow: { id: 'entity:HL-2003', title: 'Acme Nordics AB' } });
    const reply = (await harness.twilio.waitForMessages(before + 1, 10_000)).at(-1)?.body ?? '';
    expect(reply).toContain('HL-2003');
  });

  test('in Spanish as numbered text where Content is refused; an answer after the question expired gets the Spanish reply', async () => {
    harness.twilio.failContent(400);
    try {
      const question = await say(LUIS, 'do:select-es ¿de cuál de mis empresas hablamos?');
      expect(harness.twilio.messages.at(-1)?.contentSid).toBeUndefined();
      expect(question).toBe(
        '¿De qué empresa se trata?\n1. Acme Ltd\n2. Acme Iberia SL\n3. Acme Nordics AB\n4. Acme Benelux BV\nResponda con el número o el nombre.',
      );
    } finally {
      harness.twilio.failContent(undefined);
    }
    // The turn that asked can no longer be resumed (its decision expired): the pending question names a run nobody stored.
    const pendingKey = stateKeys.pending(conversationKeyFor(LUIS));
    const pending = JSON.parse((await harness.services.redis.get(pendingKey)) ?? '{}') as Record<string, unknown>;
    expect(pending.language).toBe('es');
    await harness.services.redis.set(pendingKey, JSON.stringify({ ...pending, runId: 'a-run-whose-decision-expired' }), 'KEEPTTL');
    const models = harness.models.calls.length;
    expect(await say(LUIS, '2')).toBe('Lo siento, esa pregunta ha caducado. ¿Podría decirme de nuevo qué le gustaría hacer?');
    expect(harness.models.calls.length).toBe(models);
  });
});

describe("a write's own enum values as choices", () => {
  const slotWrites = () => mcp.applied.filter((write) => write.tool === 'order_set_delivery_slot');

  test('a missing enum argument is asked as a quick reply of its values; a tap fills it, then Confirm runs it once with that value', async () => {
    const question = await say(ANA, 'do:slot deliver order 5001 at a better time');
    expect(question).toContain('For "Set a delivery slot", please choose: Delivery slot');
    expect(question).not.toContain('Please confirm');
    const asked = harness.twilio.messages.at(-1);
    expect(asked?.choices?.map((choice) => choice.title)).toEqual(['morning', 'afternoon', 'evening']);
    const questionId = /^arg:(.+):0$/.exec(asked?.choices?.[0]?.id ?? '')?.[1];
    expect(questionId).toBeDefined();
    expect(asked?.choices?.map((choice) => choice.id)).toEqual([0, 1, 2].map((index) => `arg:${questionId}:${index}`));
    const quickReply = harness.twilio.contents.find((content) => content.sid === asked?.contentSid);
    expect(Object.keys(quickReply?.types ?? {})).toEqual(['twilio/quick-reply', 'twilio/text']);
    // Nothing proposed yet.
    const documents = await harness.services.mongo.collection(ACTIONS_COLLECTION).find({ tool: 'order_set_delivery_slot' }).toArray();
    expect(documents).toEqual([]);

    const confirmation = await say(ANA, 'evening', asked?.choices?.[2]?.id);
    expect(confirmation).toContain('Please confirm: Set a delivery slot');
    expect(confirmation).toContain('• Order number: 5001');
    expect(confirmation).toContain('• Delivery slot: evening');
    expect(confirmation).toContain('• For: Acme Ltd');
    const proposed = await latestAction(ANA, 'order_set_delivery_slot');
    expect(proposed.args).toEqual({ orderNumber: '5001', slot: 'evening', customerId: 'CUST-ACME' });
    const sent = harness.twilio.messages.at(-1);
    expect(sent?.choices).toEqual([
      { title: 'Confirm', id: `act:${proposed._id}:confirm` },
      { title: 'Cancel', id: `act:${proposed._id}:cancel` },
    ]);
    expect(slotWrites()).toEqual([]);

    const outcome = await say(ANA, 'Confirm', sent?.choices?.[0]?.id);
    expect(outcome).toContain('Order 5001 is now delivered in the evening.');
    expect(slotWrites()).toEqual([
      { tool: 'order_set_delivery_slot', arguments: { orderNumber: '5001', slot: 'evening', customerId: 'CUST-ACME' }, idempotencyKey: proposed._id },
    ]);
    expect(mcp.orders().find((order) => order.number === '5001')?.deliverySlot).toBe('evening');
  });

  test('a value outside the enum is asked too; without Content the options go as numbered text and a typed option name fills it', async () => {
    harness.twilio.failContent(400);
    try {
      const question = await say(ANA, 'do:slot-bad deliver order 5002 at midnight');
      const sent = harness.twilio.messages.at(-1);
      expect(sent?.contentSid).toBeUndefined();
      expect(question).toContain('please choose: Delivery slot');
      expect(question).toContain('1. morning\n2. afternoon\n3. evening');
      expect(question).toContain('Reply with the number or the option.');
      const confirmation = await say(ANA, 'Afternoon');
      expect(confirmation).toContain('• Delivery slot: afternoon');
      expect(confirmation).toContain('1. Confirm\n2. Cancel');
      const proposed = await latestAction(ANA, 'order_set_delivery_slot');
      await say(ANA, 'yes');
      await recorded(proposed._id, 'done');
    } finally {
      harness.twilio.failContent(undefined);
    }
    expect(mcp.orders().find((order) => order.number === '5002')?.deliverySlot).toBe('afternoon');
    expect(slotWrites().at(-1)?.arguments).toEqual({ orderNumber: '5002', slot: 'afternoon', customerId: 'CUST-ACME' });
  });

  test("another question's tap is refused and counted; nothing is proposed or run", async () => {
    const writes = slotWrites().length;
    expect(await say(ANA, 'do:slot again')).toContain('please choose: Delivery slot');
    const refusals = counter('action_refusals_total', { reason: 'foreign-choice', channel: 'whatsapp' });
    const reply = await say(ANA, 'morning', 'arg:00000000-0000-4000-8000-000000000000:0');
    expect(reply).toContain("isn't valid");
    expect(counter('action_refusals_total', { reason: 'foreign-choice', channel: 'whatsapp' })).toBe(refusals + 1);
    // The question is over: a "1" now is a new turn, not an answer.
    const next = await say(ANA, '1');
    expect(next).toContain('Fresh answer to: 1');
    expect(slotWrites().length).toBe(writes);
  });

  test('any other message ends the question and is answered as a new turn', async () => {
    const writes = slotWrites().length;
    expect(await say(ANA, 'do:slot once more')).toContain('please choose: Delivery slot');
    const reply = await say(ANA, 'actually, when is my next invoice due?');
    expect(reply).toContain('Fresh answer to: actually, when is my next invoice due?');
    const documents = await harness.services.mongo.collection(ACTIONS_COLLECTION).find({ tool: 'order_set_delivery_slot', state: 'proposed' }).toArray();
    expect(documents).toEqual([]);
    expect(slotWrites().length).toBe(writes);
  });
});

describe("the customer's language", () => {
  test('a Spanish confirmation is rendered and answered in Spanish; the language never reaches the MCP server', async () => {
    const question = await say(ANA, 'do:link-es ¿me manda el enlace de pago de la factura 1042?');
    expect(question).toContain('Por favor, confirme: Create a payment link');
    expect(question).toContain('• Invoice: 1042');
    expect(question).toContain('• Para: Acme Ltd');
    expect(question).not.toContain('Please confirm');
    const proposed = await latestAction(ANA, 'invoice_create_payment_link');
    expect(proposed.args).toEqual({ number: '1042', customerId: 'CUST-ACME' });
    expect(proposed.summary).toContain('Por favor, confirme:');
    expect(harness.twilio.messages.at(-1)?.choices).toEqual([
      { title: 'Confirmar', id: `act:${proposed._id}:confirm` },
      { title: 'Cancelar', id: `act:${proposed._id}:cancel` },
    ]);
    await say(ANA, 'Sí');
    await recorded(proposed._id, 'done');
    const call = mcp.calls.filter((candidate) => candidate.name === 'invoice_create_payment_link').at(-1);
    expect(call?.arguments).toEqual({ number: '1042', customerId: 'CUST-ACME' });
  });

  test('the text fallback, the choice question and a typed "no" in Spanish; "ja" confirms in German', async () => {
    harness.twilio.failContent(400);
    try {
      const question = await say(ANA, 'do:slot-es ¿puede entregar el pedido 5002 en otro horario?');
      expect(question).toContain('Para «Set a delivery slot», elija: Delivery slot');
      expect(question).toContain('Responda con el número o la opción.');
      const confirmation = await say(ANA, '3');
      expect(confirmation).toContain('• Delivery slot: evening');
      expect(confirmation).toContain('1. Confirmar\n2. Cancelar');
      expect(confirmation).toContain('Responda 1 o «sí» para confirmar, 2 o «no» para cancelar.');
      const proposed = await latestAction(ANA, 'order_set_delivery_slot');
      await say(ANA, 'no');
      await recorded(proposed._id, 'cancelled');

      const german = await say(ANA, 'do:link-de');
      expect(german).toContain('Bitte bestätigen: Create a payment link');
      expect(german).toContain('1. Bestätigen\n2. Abbrechen');
      const link = await latestAction(ANA, 'invoice_create_payment_link');
      await say(ANA, 'Ja');
      await recorded(link._id, 'done');
    } finally {
      harness.twilio.failContent(undefined);
    }
    expect(mcp.orders().find((order) => order.number === '5002')?.deliverySlot).toBe('afternoon');
  });

  test('an unknown language falls back to English', async () => {
    const question = await say(ANA, 'do:link-xx');
    // The write is offered with the language property (its scoped argument hidden).
    const offered = harness.models
      .replyCalls()
      .findLast((call) => call.toolNames.includes('invoice_create_payment_link'))
      ?.options.tools?.find((tool) => tool.name === 'invoice_create_payment_link') as { inputSchema?: { properties?: object } } | undefined;
    expect(Object.keys(offered?.inputSchema?.properties ?? {})).toEqual(['number', 'language']);
    expect(question).toContain('Please confirm: Create a payment link');
    expect(question).toContain('• For: Acme Ltd');
    const proposed = await latestAction(ANA, 'invoice_create_payment_link');
    expect(harness.twilio.messages.at(-1)?.choices?.map((choice) => choice.title)).toEqual(['Confirm', 'Cancel']);
    await say(ANA, 'no');
    await recorded(proposed._id, 'cancelled');
  });
});

describe('who may confirm', () => {
  test("another number's yes does not confirm Ana's action", async () => {
    await say(ANA, 'do:cancel order 5002 please');
    const proposed = await latestAction(ANA, 'order_cancel');
    await say(ANA_COLLEAGUE, 'yes');
    await say(ANA_COLLEAGUE, 'Confirm', `act:${proposed._id}:confirm`);
    expect((await current(ANA, proposed._id)).state).toBe('proposed');
    expect(mcp.applied.filter((write) => write.tool === 'order_cancel')).toEqual([]);
    await say(ANA, 'no');
  });

  test('an unlinked number is never offered a write', async () => {
    const denied = counter('tool_scope_denied_total', { reason: 'unoffered-tool', channel: 'whatsapp' });
    const reply = await say(UNLINKED, 'do:cancel order 5002 please');
    expect(reply).not.toContain('Please confirm');
    const offered = harness.models.replyCalls().at(-1)?.toolNames ?? [];
    expect(offered.filter((name) => name.startsWith('order_') || name === 'invoice_create_payment_link')).toEqual([]);
    expect(counter('tool_scope_denied_total', { reason: 'unoffered-tool', channel: 'whatsapp' })).toBe(denied + 1);
  });
});

describe('an adversarial model', () => {
  test('naming another customer is refused and counted; nothing is proposed', async () => {
    const denied = counter('tool_scope_denied_total', { reason: 'scoped-argument', channel: 'whatsapp' });
    const reply = await say(ANA, 'do:foreign-customer');
    expect(reply).not.toContain('Please confirm');
    // The model is told in words that fit a change, not a read.
    expect(reply).toContain("order_cancel can only change this customer's own records; it was not proposed.");
    expect(counter('tool_scope_denied_total', { reason: 'scoped-argument', channel: 'whatsapp' })).toBe(denied + 1);
  });

  test("another company's order runs bound to the caller, and the server refuses it", async () => {
    await say(ANA, 'do:foreign-order');
    const proposed = await latestAction(ANA, 'order_cancel');
    expect(proposed.args).toEqual({ orderNumber: '6001', customerId: 'CUST-ACME' });
    const reply = await say(ANA, 'yes');
    expect(reply).toContain('failed');
    expect(reply).toContain('Order 6001 was not found.');
    await recorded(proposed._id, 'failed');
    expect(mcp.orders().find((order) => order.number === '6001')?.status).toBe('open');
  });

  test('confirming on the customer’s behalf is an unoffered tool, refused and counted', async () => {
    const denied = counter('tool_scope_denied_total', { reason: 'unoffered-tool', channel: 'whatsapp' });
    await say(ANA, 'do:self-confirm');
    expect(counter('tool_scope_denied_total', { reason: 'unoffered-tool', channel: 'whatsapp' })).toBe(denied + 1);
  });

  test('a write called again with other arguments after an outcome is only a new proposal', async () => {
    await say(ANA, 'do:reschedule please');
    const first = await latestAction(ANA, 'order_reschedule_delivery');
    const applied = mcp.applied.length;
    adversaryRepeats = true;
    try {
      const reply = await say(ANA, 'yes');
      // The confirmed one ran; the model's second call is a new question, not a run.
      expect(reply).toContain('Please confirm: Reschedule a delivery');
      expect(reply).toContain('2030-01-01');
    } finally {
      adversaryRepeats = false;
    }
    await recorded(first._id, 'done');
    expect(mcp.applied.length).toBe(applied + 1);
    const second = await latestAction(ANA, 'order_reschedule_delivery');
    expect(second._id).not.toBe(first._id);
    expect(second.state).toBe('proposed');
    await say(ANA, 'no');
    expect(mcp.applied.length).toBe(applied + 1);
  });

  test('an irreversible write not opted in is handed to the team: the customer cannot confirm it, a teammate runs it once', async () => {
    const reply = await say(ANA, 'do:refund');
    expect(reply).not.toContain('Please confirm');
    expect(reply).toContain('waiting for our team');
    const proposed = await latestAction(ANA, 'refund_create');
    expect(proposed).toMatchObject({ state: 'proposed', confirmer: 'teammate', args: { number: '1043', amount: '10.00', customerId: 'CUST-ACME' } });
    expect(counter('actions_total', { tool: 'refund_create', outcome: 'handed_off' })).toBe(1);
    await say(ANA, 'yes');
    await say(ANA, 'Confirm', `act:${proposed._id}:confirm`);
    expect(mcp.refunds()).toEqual([]);
    expect((await current(ANA, proposed._id)).state).toBe('proposed');

    const run = () => harness.http.post(`/admin/actions/${proposed._id}/run`).set('Authorization', `Bearer ${ADMIN_TOKEN}`).send({ name: 'Marta' });
    const first = await run();
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ action: { state: 'done', confirmedBy: { via: 'teammate', name: 'admin:Marta' } } });
    const again = await run();
    expect(again.status).toBe(200);
    expect(mcp.refunds()).toEqual([{ number: '1043', amount: '10.00' }]);
    expect(mcp.applied.filter((write) => write.tool === 'refund_create')).toHaveLength(1);
    await recorded(proposed._id, 'done');
  });

  test('a teammate may decline a handed-off change, once; a customer-confirmed action is not theirs to run', async () => {
    await say(ANA, 'do:refund');
    const proposed = await latestAction(ANA, 'refund_create');
    const declined = await harness.http.post(`/admin/actions/${proposed._id}/decline`).set('Authorization', `Bearer ${ADMIN_TOKEN}`).send({ name: 'Marta' });
    expect(declined.body).toMatchObject({ action: { state: 'cancelled' } });
    const late = await harness.http.post(`/admin/actions/${proposed._id}/run`).set('Authorization', `Bearer ${ADMIN_TOKEN}`).send({ name: 'Marta' });
    expect(late.body).toMatchObject({ action: { state: 'cancelled' } });
    expect(mcp.refunds()).toHaveLength(1);

    await say(ANA, 'do:cancel order 5002');
    const customers = await latestAction(ANA, 'order_cancel');
    await recorded(customers._id, 'proposed');
    const refused = await harness.http.post(`/admin/actions/${customers._id}/run`).set('Authorization', `Bearer ${ADMIN_TOKEN}`).send({ name: 'Marta' });
    expect(refused.status).toBe(409);
    await say(ANA, 'no');
    expect(mcp.applied.filter((write) => write.tool === 'order_cancel')).toEqual([]);
  });
});

describe('GET /admin/actions', () => {
  test('lists the recorded actions to an operator, newest first, filtered by state', async () => {
    expect((await harness.http.get('/admin/actions')).status).toBe(401);
    const response = await harness.http.get('/admin/actions?state=done&limit=100').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(response.status).toBe(200);
    const actions = (response.body as { actions: ActionRecord[] }).actions;
    expect(actions.length).toBeGreaterThan(0);
    expect(actions.every((action) => action.state === 'done')).toBe(true);
    expect(actions.map((action) => action.tool)).toContain('order_reschedule_delivery');
    const bad = await harness.http.get('/admin/actions?state=nonsense').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(bad.status).toBe(400);
  });
});
