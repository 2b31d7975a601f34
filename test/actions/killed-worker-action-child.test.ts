/**
 * A worker SIGKILLed between the customer's tap and the tool's answer, as in
 * `killed-worker-action.test.ts`, but answered again by another worker process: the tap's batch
 * is a suspect there, so its next attempts run in child processes of that worker. The write still
 * runs once: the children find the action `running` until its lease ends (each attempt retried as
 * an outage), then call again with the same idempotency key; the customer gets one outcome, and
 * the batch is never quarantined (its worker died beside nothing, killed from outside).
 */
import { afterAll, expect, test } from '@jest/globals';
import { RUN_LEASE_MS } from '../../src/actions/action-runner.js';
import { ActionRecordSchema } from '../../src/actions/action-store.js';
import { ACTIONS_COLLECTION } from '../../src/store/transcript-writer.js';
import { BUSINESS_CATEGORY_PREFIXES } from '../support/business-mcp.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';
import { startWorkerProcess, type WorkerProcess } from '../support/spawn-worker.js';

const ANA = 'whatsapp:+447700907011';

const workers: WorkerProcess[] = [];
let harness: Harness | undefined;
let mcp: McpTestServer | undefined;
afterAll(async () => {
  for (const worker of workers) worker.process.kill('SIGKILL');
  await harness?.close();
  await mcp?.close();
});

test('the write runs once through the suspect children; one outcome reaches the customer, nothing quarantined', async () => {
  mcp = await startMcpServer();
  harness = await startHarness({ worker: false, env: { MCP_SERVER_URL: mcp.url, MCP_CATEGORY_PREFIXES: BUSINESS_CATEGORY_PREFIXES } });
  await harness.services.contacts.upsert({ address: ANA, name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] });
  const start = async () => {
    const worker = await startWorkerProcess(harness!.env, harness!.queuePrefix, 0, { TEST_SCRIPT: 'action' });
    workers.push(worker);
    return worker;
  };
  const first = await start();

  // "invoice" routes the turn to the bookkeeper (the test judge routes by keyword).
  await harness.sendWhatsapp({ from: ANA, body: 'do:reschedule the delivery, and the invoice too' });
  const [question] = await harness.twilio.waitForMessages(1, 20_000);
  expect(question?.body).toContain('Please confirm: Reschedule a delivery');
  const payload = question?.choices?.[0]?.id ?? '';

  const hold = mcp.holdNextWrite('order_reschedule_delivery');
  await harness.sendWhatsapp({ from: ANA, body: 'Confirm', button: { text: 'Confirm', payload } });
  await hold.reached;
  // The write took effect on the server; its answer never reaches the worker.
  first.process.kill('SIGKILL');
  await first.exited;
  hold.release();

  const next = await start();
  const messages = await harness.twilio.waitForMessages(2, RUN_LEASE_MS + 60_000);
  // The test worker's model answers the tap's turn, told the run's outcome, in its own words.
  expect(messages[1]?.body).toBe('Slow answer to: Confirm');

  const actionId = payload.split(':')[1];
  const record = await eventually(async () => {
    const document = await harness!.services.mongo.collection(ACTIONS_COLLECTION).findOne({ _id: actionId as never });
    return document?.state === 'done' ? ActionRecordSchema.parse(document) : undefined;
  }, 30_000);
  expect(record.calls).toBe(2);
  expect(mcp.applied).toHaveLength(1);
  expect(mcp.calls.filter((call) => call.name === 'order_reschedule_delivery').map((call) => call.meta?.['wa-assistant/idempotency-key'])).toEqual([
    actionId,
    actionId,
  ]);
  // Answered in a child of the next worker (the same entry, which says `worker-ready` too), which lives on; nothing was given up on.
  expect(next.output().match(/worker-ready/g)?.length).toBeGreaterThan(1);
  expect(next.output()).not.toContain('suspect-child-died');
  expect(next.output()).not.toContain('given up on');
  expect(mcp.orders().find((order) => order.number === '5001')?.deliveryDate).toBe('2026-12-06');
  expect(harness.twilio.messages).toHaveLength(2);
}, 180_000);
