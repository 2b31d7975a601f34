/**
 * A confirmed write whose caller gives up while the MCP server still works on it: the worker
 * running the Confirm loses the conversation's lock mid-call (its turn aborted, the call with it),
 * and the server — one that notes an idempotency key only once the write is done — is still
 * applying the change. WhatsApp end to end (signed webhook → worker → the real test MCP server →
 * fake Twilio; Redis and FerretDB real). The run's lease holds for the call's whole timeout and
 * its margin: no attempt calls the write again meanwhile; once the lease is over the retry asks
 * with the same key, gets the first call's answer, and the change has one effect.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { roster } from '../../roles/index.js';
import { actionKey, ActionRecordSchema } from '../../src/actions/action-store.js';
import { redisKeys } from '../../src/queue/keys.js';
import { BUSINESS_CATEGORY_PREFIXES } from '../support/business-mcp.js';
import { judgeRoutingTo, type Script } from '../support/deterministic-model.js';
import { eventually, newMessageSid, startHarness, type Harness } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';

const ANA = 'whatsapp:+447700906501';

const model: Script = ({ userText, system, toolResults }) => {
  const outcome = /Result: (.*)\. Continue from there\./s.exec(system)?.[1];
  if (outcome) return { text: `Outcome: ${outcome}` };
  if (userText.includes('do:reschedule') && toolResults.length === 0) {
    return { toolCalls: [{ name: 'order_reschedule_delivery', input: { orderNumber: '5001', date: '2026-12-14' } }] };
  }
  return { text: `Fresh answer to: ${userText}` };
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
      MESSAGE_RETRY_BACKOFF_MS: '250',
      MESSAGE_RETRY_BUDGET_MS: '120000',
    },
    overrides: { roles: roster },
  });
  harness.models.setJudge(judgeRoutingTo('bookkeeper'));
  await harness.services.contacts.upsert({ address: ANA, name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] });
});
afterAll(async () => {
  await harness.close();
  await mcp.close();
});

const sentTo = (to: string) => harness.twilio.messages.filter((message) => message.to === to);

async function send(body: string, button?: string): Promise<void> {
  const response = await harness.sendWhatsapp({ from: ANA, body, messageSid: newMessageSid(), ...(button ? { button: { text: body, payload: button } } : {}) });
  expect(response.status).toBe(200);
}

test('a call its worker gave up on (lost lock) still holds the run: nobody calls the write again while the server works on it; one effect, one outcome', async () => {
  await send('do:reschedule please');
  const question = await eventually(() => sentTo(ANA).at(0), 20_000);
  expect(question.body).toContain('Please confirm: Reschedule a delivery');
  const confirm = question.choices?.[0]?.id ?? '';
  const actionId = confirm.split(':')[1]!;
  const keyed = () => mcp.calls.filter((call) => call.meta?.['wa-assistant/idempotency-key'] === actionId);

  const slow = mcp.slowNextWrite('order_reschedule_delivery');
  await send('Confirm', confirm);
  await slow.reached;
  // Another worker's now: the holder's renewal finds the lock gone, and its turn (the call with it) is aborted.
  await harness.services.redis.del(redisKeys.lock(conversationKeyFor(ANA)));
  await eventually(() => harness.logs.find((line) => line.event === 'action-outcome-unknown' && line.actionId === actionId), 20_000);
  // The next attempt finds the run held (or, wrongly, calls the write a second time).
  await eventually(
    () =>
      keyed().length > 1 ||
      harness.logs.some((line) => line.event === 'inbound-retrying' && JSON.stringify(line).includes('another attempt is running it')) ||
      undefined,
    20_000,
  );
  expect(keyed()).toHaveLength(1);
  expect(sentTo(ANA).filter((message) => message.body.startsWith('Outcome:'))).toEqual([]);

  // The server finishes the first call; once the lease is over the retry asks with the same key and gets its answer.
  slow.release();
  const outcome = await eventually(() => sentTo(ANA).find((message) => message.body.startsWith('Outcome:')), 60_000);
  expect(outcome.body).toContain('The delivery of order 5001 is now on 2026-12-14.');
  expect(mcp.applied.filter((write) => write.idempotencyKey === actionId)).toHaveLength(1);
  const raw = await harness.services.redis.hget(actionKey(conversationKeyFor(ANA), actionId), 'record');
  const record = ActionRecordSchema.parse(JSON.parse(raw!));
  expect(record.state).toBe('done');
  // The first call and at least one retry after the lease (a retry that reached the server before
  // the released first call answered, on a slow machine, asks once more with the same key: still one effect).
  expect(record.calls).toBeGreaterThanOrEqual(2);
  expect(sentTo(ANA).filter((message) => message.body.startsWith('Outcome:'))).toHaveLength(1);
}, 120_000);
