/**
 * A confirmation answered in time whose turn runs after its time is up: WhatsApp's quiet period
 * holds the turn 4 s after the customer's tap (as a widget visitor typing would), and the
 * confirmation's time runs out meanwhile. WhatsApp end to end (signed webhook → worker → the
 * real test MCP server → fake Twilio; Redis and FerretDB real). An answer is in time by when it
 * arrived: the change runs; one that arrived after the time was up is still answered "expired".
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { roster } from '../../roles/index.js';
import { actionKey, ActionRecordSchema, type ActionRecord } from '../../src/actions/action-store.js';
import { KEY_PREFIX } from '../../src/redis.js';
import { BUSINESS_CATEGORY_PREFIXES } from '../support/business-mcp.js';
import { judgeRoutingTo, type Script } from '../support/deterministic-model.js';
import { eventually, newMessageSid, startHarness, type Harness } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';

const ANA = 'whatsapp:+447700906601';
const BEA = 'whatsapp:+447700906602';
const CARL = 'whatsapp:+447700906603';

const model: Script = ({ userText, system, toolResults }) => {
  const outcome = /Result: (.*)\. Continue from there\./s.exec(system)?.[1];
  if (outcome) return { text: `Outcome: ${outcome}` };
  if (userText.includes('do:reschedule') && toolResults.length === 0) {
    return { toolCalls: [{ name: 'order_reschedule_delivery', input: { orderNumber: '5001', date: '2026-12-15' } }] };
  }
  return { text: `Fresh answer to: ${userText}` };
};

let mcp: McpTestServer;
let harness: Harness;
beforeAll(async () => {
  mcp = await startMcpServer();
  harness = await startHarness({
    script: model,
    // Every turn waits until its newest message is 4 s old (a burst's quiet period).
    env: { MCP_SERVER_URL: mcp.url, MCP_CATEGORY_PREFIXES: BUSINESS_CATEGORY_PREFIXES, COALESCE_MS: '4000' },
    // The sweeper looks often: it must leave a confirmation whose answer may still be on its way.
    overrides: { roles: roster, actionSweepMs: 200 },
  });
  harness.models.setJudge(judgeRoutingTo('bookkeeper'));
  for (const address of [ANA, BEA, CARL]) {
    await harness.services.contacts.upsert({ address, name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] });
  }
});
afterAll(async () => {
  await harness.close();
  await mcp.close();
});

const sentTo = (to: string) => harness.twilio.messages.filter((message) => message.to === to);

async function send(from: string, body: string, button?: string): Promise<void> {
  const response = await harness.sendWhatsapp({ from, body, messageSid: newMessageSid(), ...(button ? { button: { text: body, payload: button } } : {}) });
  expect(response.status).toBe(200);
}

async function propose(from: string): Promise<{ confirm: string; actionId: string }> {
  await send(from, 'do:reschedule please');
  const question = await eventually(() => sentTo(from).at(0), 20_000);
  expect(question.body).toContain('Please confirm: Reschedule a delivery');
  const confirm = question.choices?.[0]?.id ?? '';
  return { confirm, actionId: confirm.split(':')[1]! };
}

async function action(from: string, actionId: string): Promise<ActionRecord> {
  const raw = await harness.services.redis.hget(actionKey(conversationKeyFor(from), actionId), 'record');
  return ActionRecordSchema.parse(JSON.parse(raw!));
}

/** The confirmation's time is up at `at` (ms), as if it had been proposed that much earlier; the sweeper looks at it then. */
async function timeUpAt(from: string, actionId: string, at: number): Promise<void> {
  const record = await action(from, actionId);
  await harness.services.redis.hset(
    actionKey(conversationKeyFor(from), actionId),
    'record',
    JSON.stringify({ ...record, expiresAt: new Date(at).toISOString() }),
  );
  await harness.services.redis.zadd(`${KEY_PREFIX}:actions-due`, at, `${actionId} ${conversationKeyFor(from)}`);
}

async function reply(from: string): Promise<string> {
  const message = await eventually(() => sentTo(from).at(1), 30_000);
  return message.body;
}

test('a Confirm tapped in time, its turn held past the time: the change runs once', async () => {
  const { confirm, actionId } = await propose(ANA);
  await send(ANA, 'Confirm', confirm);
  // The tap has arrived; its turn waits out the quiet period while the time runs out.
  await timeUpAt(ANA, actionId, Date.now());
  expect(await reply(ANA)).toContain('The delivery of order 5001 is now on 2026-12-15.');
  expect((await action(ANA, actionId)).state).toBe('done');
  expect(mcp.applied.filter((write) => write.idempotencyKey === actionId)).toHaveLength(1);
}, 60_000);

test('a typed "yes" in time, its turn held past the time: the change runs once', async () => {
  const { actionId } = await propose(BEA);
  await send(BEA, 'yes');
  await timeUpAt(BEA, actionId, Date.now());
  expect(await reply(BEA)).toContain('The delivery of order 5001 is now on 2026-12-15.');
  expect(mcp.applied.filter((write) => write.idempotencyKey === actionId)).toHaveLength(1);
}, 60_000);

test('a Confirm that arrived after the time was up: expired, nothing runs', async () => {
  const { confirm, actionId } = await propose(CARL);
  await timeUpAt(CARL, actionId, Date.now() - 1);
  await send(CARL, 'Confirm', confirm);
  expect(await reply(CARL)).toBe('That confirmation has expired, so nothing was changed. Tell me if you would still like to do it.');
  expect((await action(CARL, actionId)).state).toBe('expired');
  expect(mcp.applied.filter((write) => write.idempotencyKey === actionId)).toEqual([]);
}, 60_000);
