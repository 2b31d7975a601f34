/**
 * The crash-and-outage matrix for confirmed actions (WhatsApp end to end; Redis, FerretDB and the
 * MCP server real): whatever fails after the customer's Confirm, the change has exactly one
 * effect, the customer gets exactly one outcome, and the record ends `done`. The rows not here
 * are elsewhere: the model failing on the outcome (at-most-once.test.ts), a worker SIGKILLed with
 * the write's answer in flight (killed-worker-action.test.ts).
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { actionKey, ActionRecordSchema, type ActionRecord } from '../../src/actions/action-store.js';
import { roster } from '../../roles/index.js';
import { BUSINESS_CATEGORY_PREFIXES } from '../support/business-mcp.js';
import { allowConsole } from '../support/console-guard.js';
import { judgeRoutingTo, type Script } from '../support/deterministic-model.js';
import { eventually, newMessageSid, startHarness, type Harness } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';
import { startRestartableRedis, type RestartableRedisHandle } from '../support/services.js';

const model: Script = ({ userText, system, toolResults }) => {
  const outcome = /Result: (.*)\. Continue from there\./s.exec(system)?.[1];
  if (outcome) return { text: `Outcome: ${outcome}` };
  if (userText.includes('do:reschedule') && toolResults.length === 0) {
    return { toolCalls: [{ name: 'order_reschedule_delivery', input: { orderNumber: '5001', date: '2026-12-11' } }] };
  }
  return { text: `Fresh answer to: ${userText}` };
};

let redis: RestartableRedisHandle;
let mcp: McpTestServer;
let port: number;
let harness: Harness;
beforeAll(async () => {
  redis = await startRestartableRedis();
  mcp = await startMcpServer();
  port = Number(new URL(mcp.url).port);
  harness = await startHarness({
    script: model,
    env: {
      REDIS_URL: redis.url,
      MCP_SERVER_URL: mcp.url,
      MCP_CATEGORY_PREFIXES: BUSINESS_CATEGORY_PREFIXES,
      MESSAGE_RETRY_BACKOFF_MS: '250',
      MESSAGE_RETRY_BUDGET_MS: '120000',
    },
    overrides: { roles: roster },
  });
  harness.models.setJudge(judgeRoutingTo('bookkeeper'));
});
afterAll(async () => {
  await harness.close();
  await mcp.close();
  await redis.stop();
});

const bodiesTo = (to: string) => harness.twilio.messages.filter((message) => message.to === to).map((message) => message.body);

async function send(from: string, body: string, button?: string): Promise<void> {
  const sid = newMessageSid();
  // Retried until acknowledged, as Twilio does (Redis may be restarting).
  await eventually(async () => {
    const response = await harness
      .sendWhatsapp({ from, body, messageSid: sid, ...(button ? { button: { text: body, payload: button } } : {}) })
      .catch(() => undefined);
    return response?.status === 200 ? true : undefined;
  }, 30_000);
}

async function propose(from: string): Promise<{ confirm: string; actionId: string }> {
  await harness.services.contacts.upsert({ address: from, name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] });
  await send(from, 'do:reschedule please');
  const question = await eventually(async () => bodiesTo(from).at(0), 20_000);
  expect(question).toContain('Please confirm: Reschedule a delivery');
  const confirm = harness.twilio.messages.find((message) => message.to === from)?.choices?.[0]?.id ?? '';
  expect(confirm).toMatch(/^act:.+:confirm$/);
  return { confirm, actionId: confirm.split(':')[1]! };
}

async function record(from: string, actionId: string): Promise<ActionRecord | undefined> {
  const raw = await harness.services.redis.hget(actionKey(conversationKeyFor(from), actionId), 'record');
  return raw ? ActionRecordSchema.parse(JSON.parse(raw)) : undefined;
}

/** Exactly one outcome reached the customer, nothing after it, and the record ended done. */
async function settledOnce(from: string, actionId: string, effects: () => number): Promise<void> {
  await eventually(async () => (bodiesTo(from).some((body) => body.startsWith('Outcome:')) ? true : undefined), 60_000);
  await eventually(async () => ((await record(from, actionId))?.state === 'done' ? true : undefined), 20_000);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  expect(bodiesTo(from).filter((body) => body.startsWith('Outcome:'))).toHaveLength(1);
  expect(bodiesTo(from).at(-1)).toContain('"status":"done"');
  expect(effects()).toBe(1);
}

test('the MCP server unreachable when the customer confirms: resolved by the actions machinery once it is back, one effect, one outcome', async () => {
  allowConsole('error', /ECONNREFUSED|fetch failed|SSE stream disconnected/);
  const from = 'whatsapp:+447700909101';
  const { confirm, actionId } = await propose(from);
  await mcp.close();
  await eventually(async () => (harness.logs.some((line) => line.event === 'mcp-unavailable') ? true : undefined), 20_000);

  await send(from, 'Confirm', confirm);
  // Retried while the server is away: never answered as the word "Confirm", never failed.
  await new Promise((resolve) => setTimeout(resolve, 2000));
  expect(bodiesTo(from)).toHaveLength(1);
  expect(['confirmed', 'running']).toContain((await record(from, actionId))?.state);

  mcp = await startMcpServer({ port });
  await settledOnce(from, actionId, () => mcp.applied.filter((write) => write.idempotencyKey === actionId).length);
}, 120_000);

test('Redis restarted while the confirmed write runs: one effect, one outcome', async () => {
  allowConsole('error', /ECONNRESET|ECONNREFUSED|EPIPE|Connection is closed/);
  const from = 'whatsapp:+447700909102';
  const { confirm, actionId } = await propose(from);
  const hold = mcp.holdNextWrite('order_reschedule_delivery');
  await send(from, 'Confirm', confirm);
  await hold.reached;
  await redis.restart();
  hold.release();
  await settledOnce(from, actionId, () => mcp.applied.filter((write) => write.idempotencyKey === actionId).length);
}, 120_000);

test('the write answer lost on the way back: resolved with the same key, one effect, one outcome', async () => {
  const from = 'whatsapp:+447700909103';
  const { confirm, actionId } = await propose(from);
  // The write takes effect; its answer is held past the MCP call's timeout, so the worker never hears it.
  const hold = mcp.holdNextWrite('order_reschedule_delivery');
  await send(from, 'Confirm', confirm);
  await hold.reached;
  await eventually(async () => (harness.logs.some((line) => line.event === 'action-outcome-unknown') ? true : undefined), 40_000);
  hold.release();
  await settledOnce(from, actionId, () => mcp.applied.filter((write) => write.idempotencyKey === actionId).length);
  expect(mcp.calls.filter((call) => call.meta?.['wa-assistant/idempotency-key'] === actionId).length).toBeGreaterThanOrEqual(2);
}, 120_000);
