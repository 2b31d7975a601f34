/**
 * A question with choices whose send outcome was lost: the worker is SIGKILLed while Twilio holds
 * the quick-reply send it has already accepted. The next worker finds the reply part `sending`
 * and looks it up at Twilio — where a Content message's body is the question without the
 * numbered lines the stored text has — finds it, and sends nothing again: the customer gets the
 * question once, and their tap on it still confirms.
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, expect, test } from '@jest/globals';
import { BUSINESS_CATEGORY_PREFIXES } from '../support/business-mcp.js';
import type { Script } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';
import { startWorkerProcess } from '../support/spawn-worker.js';
import { turnsSettled } from '../support/settled.js';

const ANA = 'whatsapp:+447700907301';

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

test('the question is found at Twilio by its Content body and never sent twice', async () => {
  mcp = await startMcpServer();
  harness = await startHarness({
    worker: false,
    script: survivor,
    env: { MCP_SERVER_URL: mcp.url, MCP_CATEGORY_PREFIXES: BUSINESS_CATEGORY_PREFIXES },
  });
  await harness.services.contacts.upsert({ address: ANA, name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] });
  const worker = await startWorkerProcess(harness.env, harness.queuePrefix, 0, { TEST_SCRIPT: 'action' });
  child = worker.process;

  // Twilio takes the quick reply and holds its answer: the worker dies without knowing it was sent.
  const held = harness.twilio.holdNext({ accepted: true, to: ANA });
  await harness.sendWhatsapp({ from: ANA, body: 'do:reschedule the delivery, and the invoice too' });
  const request = await held;
  expect(request.params.ContentSid).toMatch(/^HX/);
  const exited = new Promise((resolve) => child!.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  request.release();

  await harness.services.startWorker().waitUntilReady();
  // The lost send is resolved by looking it up (not by sending again), then the turn settles.
  await eventually(() => harness!.logs.some((line) => line.event === 'reply-part-resolved') || undefined, 20_000);
  await turnsSettled(harness.services);
  const questions = harness.twilio.messages.filter((message) => message.to === ANA);
  expect(questions).toHaveLength(1);
  expect(questions[0]?.body).toContain('Please confirm: Reschedule a delivery');

  // The one question still works: a tap on it runs the change once.
  const payload = questions[0]?.choices?.[0]?.id ?? '';
  await harness.sendWhatsapp({ from: ANA, body: 'Confirm', button: { text: 'Confirm', payload } });
  const [, outcome] = await harness.twilio.waitForMessages(2, 20_000);
  expect(outcome?.body).toContain('The delivery of order 5001 is now on 2026-12-06.');
  expect(mcp.applied).toHaveLength(1);
}, 90_000);
