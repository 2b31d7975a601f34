/**
 * A worker SIGKILLed after the confirmed write ran and before the customer heard its outcome:
 * the write's answer came back and the action is `done`; the worker dies while the model phrases
 * the reply. The next worker answers the same batch with the same outcome — never a fresh turn
 * on "Confirm" that could ask for the change again — and the write ran once.
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, expect, test } from '@jest/globals';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { actionKey, ActionRecordSchema } from '../../src/actions/action-store.js';
import { BUSINESS_CATEGORY_PREFIXES } from '../support/business-mcp.js';
import type { Script } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';
import { startWorkerProcess } from '../support/spawn-worker.js';

const ANA = 'whatsapp:+447700907011';

/** The surviving worker's model: tells the outcome it is given. */
const survivor: Script = ({ system, userText }) => {
  const outcome = /Result: (.*)\. Continue from there\./s.exec(system)?.[1];
  return { text: outcome ? `Outcome: ${outcome}` : `Answer to: ${userText}` };
};

let child: ChildProcess | undefined;
let harness: Harness | undefined;
let mcp: McpTestServer | undefined;
afterAll(async () => {
  child?.kill('SIGKILL');
  await harness?.close();
  await mcp?.close();
});

test('the next worker answers with the outcome of the change the dead one ran; it ran once', async () => {
  mcp = await startMcpServer();
  harness = await startHarness({
    worker: false,
    script: survivor,
    env: { MCP_SERVER_URL: mcp.url, MCP_CATEGORY_PREFIXES: BUSINESS_CATEGORY_PREFIXES },
  });
  await harness.services.contacts.upsert({ address: ANA, name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] });
  const worker = await startWorkerProcess(harness.env, harness.queuePrefix, 0, { TEST_SCRIPT: 'action', TEST_HOLD_OUTCOME: 'on' });
  child = worker.process;

  // "invoice" routes the turn to the bookkeeper (the test judge routes by keyword).
  await harness.sendWhatsapp({ from: ANA, body: 'do:reschedule the delivery, and the invoice too' });
  const [question] = await harness.twilio.waitForMessages(1, 20_000);
  const payload = question?.choices?.[0]?.id ?? '';
  expect(payload).toMatch(/^act:.+:confirm$/);
  const actionId = payload.split(':')[1]!;

  await harness.sendWhatsapp({ from: ANA, body: 'Confirm', button: { text: 'Confirm', payload } });
  await eventually(() => worker.output().includes('outcome-called'), 20_000);
  const raw = await harness.services.redis.hget(actionKey(conversationKeyFor(ANA), actionId), 'record');
  expect(ActionRecordSchema.parse(JSON.parse(raw!)).state).toBe('done');
  const exited = new Promise((resolve) => child!.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;

  await harness.services.startWorker().waitUntilReady();
  const messages = await harness.twilio.waitForMessages(2, 30_000);
  expect(messages[1]?.body).toContain('Outcome: {"status":"done"');
  expect(messages[1]?.body).toContain('The delivery of order 5001 is now on 2026-12-06.');
  await new Promise((resolve) => setTimeout(resolve, 1500));
  expect(harness.twilio.messages).toHaveLength(2);
  expect(mcp.applied.filter((write) => write.idempotencyKey === actionId)).toHaveLength(1);
  expect(mcp.calls.filter((call) => call.meta?.['wa-assistant/idempotency-key'] === actionId)).toHaveLength(1);
}, 120_000);
