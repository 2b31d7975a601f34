/**
 * A question asked in a turn whose reply was never stored (a Redis error between the pending
 * question and the reply; the same as a lost lock or a worker dying there): the batch's retry
 * shows the question again, as it was asked, and never takes the message that led to it for its
 * answer. WhatsApp end to end (signed webhook → worker → the real test MCP server → fake
 * Twilio; Redis and FerretDB real): the customer chooses a delivery slot — typed "1", or a tap on
 * the slot's button — and the confirmation that follows fails to be stored once. The customer
 * must see "Please confirm" and nothing may run until they confirm with a later message.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { roster } from '../../roles/index.js';
import { actionKey, ActionRecordSchema, type ActionRecord } from '../../src/actions/action-store.js';
import { BUSINESS_CATEGORY_PREFIXES } from '../support/business-mcp.js';
import { judgeRoutingTo, type Script } from '../support/deterministic-model.js';
import { eventually, newMessageSid, startHarness, type Harness } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';
import { turnsSettled } from '../support/settled.js';

const ANA = 'whatsapp:+447700906401';
const BEA = 'whatsapp:+447700906402';
const CARL = 'whatsapp:+447700906403';

const model: Script = ({ userText, system, toolResults }) => {
  const outcome = /Result: (.*)\. Continue from there\./s.exec(system)?.[1];
  if (outcome) return { text: `Outcome: ${outcome}` };
  if (userText.includes('do:slot') && toolResults.length === 0) return { toolCalls: [{ name: 'order_set_delivery_slot', input: { orderNumber: '5001' } }] };
  return { text: `Fresh answer to: ${userText}` };
};

let mcp: McpTestServer;
let harness: Harness;
/** The next reply holding this text fails to be stored, once (as Redis failing on the write would). */
let failReplyWith: string | undefined;
let failedReplies = 0;

beforeAll(async () => {
  mcp = await startMcpServer();
  harness = await startHarness({
    script: model,
    env: { MCP_SERVER_URL: mcp.url, MCP_CATEGORY_PREFIXES: BUSINESS_CATEGORY_PREFIXES, MESSAGE_RETRY_BACKOFF_MS: '100' },
    overrides: { roles: roster },
  });
  harness.models.setJudge(judgeRoutingTo('bookkeeper'));
  const { transcripts } = harness.services;
  const save = transcripts.saveReplyParts.bind(transcripts);
  transcripts.saveReplyParts = async (input, records) => {
    if (failReplyWith !== undefined && input.parts.some((part) => part.includes(failReplyWith!))) {
      failReplyWith = undefined;
      failedReplies += 1;
      throw new Error('Connection is closed.');
    }
    return save(input, records);
  };
  for (const address of [ANA, BEA, CARL]) {
    await harness.services.contacts.upsert({ address, name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] });
  }
});
afterAll(async () => {
  await harness.close();
  await mcp.close();
});

const sentTo = (to: string) => harness.twilio.messages.filter((message) => message.to === to);
const slotWrites = () => mcp.applied.filter((write) => write.tool === 'order_set_delivery_slot');

/** Sends a message (or a tap), waits until every turn settled, and returns what the customer got since. */
async function say(from: string, body: string, button?: string) {
  const before = sentTo(from).length;
  const response = await harness.sendWhatsapp({ from, body, messageSid: newMessageSid(), ...(button ? { button: { text: body, payload: button } } : {}) });
  expect(response.status).toBe(200);
  await eventually(() => (sentTo(from).length > before ? true : undefined), 20_000);
  await turnsSettled(harness.services);
  return sentTo(from).slice(before);
}

async function action(from: string, actionId: string): Promise<ActionRecord> {
  const raw = await harness.services.redis.hget(actionKey(conversationKeyFor(from), actionId), 'record');
  if (!raw) throw new Error(`no action ${actionId}`);
  return ActionRecordSchema.parse(JSON.parse(raw));
}

/** Asks for the slot, then answers it (`answer`: typed, or a tap on `option`) while the confirmation's reply fails once. */
async function chooseWhileTheReplyFails(from: string, answer: { typed: string } | { option: number; label: string }) {
  const [question] = await say(from, 'do:slot deliver order 5001 at a better time');
  expect(question?.body).toContain('please choose: Delivery slot');
  failReplyWith = 'Please confirm';
  const failures = failedReplies;
  const replies = 'typed' in answer ? await say(from, answer.typed) : await say(from, answer.label, question?.choices?.[answer.option]?.id);
  expect(failedReplies).toBe(failures + 1);
  return replies;
}

test('a typed "1" for the slot, its turn failing after the confirmation was asked: the retry shows "Please confirm", nothing runs until a later yes', async () => {
  const replies = await chooseWhileTheReplyFails(ANA, { typed: '1' });
  expect(replies).toHaveLength(1);
  expect(replies[0]?.body).toContain('Please confirm: Set a delivery slot');
  expect(replies[0]?.body).toContain('• Delivery slot: morning');
  const confirm = replies[0]?.choices?.[0]?.id ?? '';
  expect(confirm).toMatch(/^act:.+:confirm$/);
  const actionId = confirm.split(':')[1]!;
  expect((await action(ANA, actionId)).state).toBe('proposed');
  expect(slotWrites()).toEqual([]);

  const [outcome] = await say(ANA, '1');
  expect(outcome?.body).toContain('Order 5001 is now delivered in the morning.');
  expect(slotWrites()).toEqual([
    { tool: 'order_set_delivery_slot', arguments: { orderNumber: '5001', slot: 'morning', customerId: 'CUST-ACME' }, idempotencyKey: actionId },
  ]);
}, 60_000);

test("a tap on the slot's button, its turn failing the same way: the retry shows the confirmation, never refuses it as a foreign tap", async () => {
  const refusals = harness.services.metrics.value('action_refusals_total', { reason: 'foreign-choice', channel: 'whatsapp' });
  const writes = slotWrites().length;
  const replies = await chooseWhileTheReplyFails(BEA, { option: 2, label: 'evening' });
  expect(replies).toHaveLength(1);
  expect(replies[0]?.body).toContain('Please confirm: Set a delivery slot');
  expect(replies[0]?.body).toContain('• Delivery slot: evening');
  const confirm = replies[0]?.choices?.[0]?.id ?? '';
  const actionId = confirm.split(':')[1]!;
  expect((await action(BEA, actionId)).state).toBe('proposed');
  expect(harness.services.metrics.value('action_refusals_total', { reason: 'foreign-choice', channel: 'whatsapp' })).toBe(refusals);

  const [outcome] = await say(BEA, 'Confirm', confirm);
  expect(outcome?.body).toContain('Order 5001 is now delivered in the evening.');
  expect(slotWrites().slice(writes)).toEqual([
    { tool: 'order_set_delivery_slot', arguments: { orderNumber: '5001', slot: 'evening', customerId: 'CUST-ACME' }, idempotencyKey: actionId },
  ]);
}, 60_000);

test("the model's own question, its turn failing once: the retry shows the same question and buttons without asking the model again", async () => {
  failReplyWith = 'please choose: Delivery slot';
  const calls = harness.models.replyCalls().length;
  const [question, ...more] = await say(CARL, 'do:slot deliver order 5001 at a better time');
  expect(failReplyWith).toBeUndefined();
  expect(more).toEqual([]);
  expect(question?.body).toContain('please choose: Delivery slot');
  // The reply model asked once; the retry asked it nothing.
  expect(harness.models.replyCalls().length).toBe(calls + 1);
  const [confirmation] = await say(CARL, 'afternoon', question?.choices?.[1]?.id);
  expect(confirmation?.body).toContain('• Delivery slot: afternoon');
}, 60_000);
