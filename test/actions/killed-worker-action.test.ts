/**
 * A worker SIGKILLed between the customer's tap and the tool's answer: the MCP server has taken
 * the write (it holds its answer, so the moment is exact) when the worker dies. The next worker
 * finds the action `running`, resolves it by calling again with the same idempotency key — the
 * server answers with the first call's result and does nothing twice — and the customer gets one
 * outcome. The effect happened once; the record says the run took two calls.
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, expect, test } from '@jest/globals';
import { RUN_LEASE_MS } from '../../src/actions/action-runner.js';
import { ActionRecordSchema } from '../../src/actions/action-store.js';
import { ACTIONS_COLLECTION } from '../../src/store/transcript-writer.js';
import { BUSINESS_CATEGORY_PREFIXES } from '../support/business-mcp.js';
import type { Script } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';
import { startWorkerProcess } from '../support/spawn-worker.js';

const ANA = 'whatsapp:+447700907001';

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

test('the write runs once; the lost answer is resolved with the same key; one outcome reaches the customer', async () => {
  mcp = await startMcpServer();
  harness = await startHarness({
    worker: false,
    script: survivor,
    env: { MCP_SERVER_URL: mcp.url, MCP_CATEGORY_PREFIXES: BUSINESS_CATEGORY_PREFIXES },
  });
  await harness.services.contacts.upsert({ address: ANA, name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] });
  const worker = await startWorkerProcess(harness.env, harness.queuePrefix, 0, { TEST_SCRIPT: 'action' });
  child = worker.process;

  // "invoice" routes the turn to the bookkeeper (the test judge routes by keyword).
  await harness.sendWhatsapp({ from: ANA, body: 'do:reschedule the delivery, and the invoice too' });
  const [question] = await harness.twilio.waitForMessages(1, 20_000);
  expect(question?.body).toContain('Please confirm: Reschedule a delivery');
  const payload = question?.choices?.[0]?.id ?? '';
  expect(payload).toMatch(/^act:.+:confirm$/);

  const hold = mcp.holdNextWrite('order_reschedule_delivery');
  await harness.sendWhatsapp({ from: ANA, body: 'Confirm', button: { text: 'Confirm', payload } });
  await hold.reached;
  // The write took effect on the server; its answer never reaches the worker.
  const exited = new Promise((resolve) => child!.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  hold.release();

  await harness.services.startWorker().waitUntilReady();
  // The next worker calls again only once the dead one's run lease is over (it can't tell a dead
  // caller from a slow one before): the outcome comes RUN_LEASE_MS after the run began, and then some.
  const messages = await harness.twilio.waitForMessages(2, RUN_LEASE_MS + 20_000);
  expect(messages[1]?.body).toContain('Outcome:');
  expect(messages[1]?.body).toContain('The delivery of order 5001 is now on 2026-12-06.');

  const actionId = payload.split(':')[1];
  const record = await eventually(async () => {
    const document = await harness!.services.mongo.collection(ACTIONS_COLLECTION).findOne({ _id: actionId as never });
    return document?.state === 'done' ? ActionRecordSchema.parse(document) : undefined;
  }, 20_000);
  expect(record.calls).toBe(2);
  expect(mcp.applied).toHaveLength(1);
  expect(mcp.calls.filter((call) => call.name === 'order_reschedule_delivery').map((call) => call.meta?.['wa-assistant/idempotency-key'])).toEqual([
    actionId,
    actionId,
  ]);
  expect(mcp.orders().find((order) => order.number === '5001')?.deliveryDate).toBe('2026-12-06');
  // Exactly one outcome: nothing more is sent once the turn settled.
  expect(harness.twilio.messages).toHaveLength(2);
}, 90_000);
