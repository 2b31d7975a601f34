/**
 * A hand-off opened by a process that died before queuing its notices is not stranded: the
 * next worker to start queues the pending notices, and the team is told once.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { openStrandedHandoff } from '../support/stranded-handoff.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';

const SALES_PHONE = 'whatsapp:+34600000901';

let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
let harness: Harness;
let teamsJson: string;

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  teamsJson = JSON.stringify({ sales: { label: 'Sales team', whatsapp: [SALES_PHONE], webhooks: [receiver.url('/sales')] } });
  // No worker yet: the process "restarts" when the test starts one.
  harness = await startHarness({ worker: false, env: { HANDOFF_TEAMS: teamsJson, NOTICE_ATTEMPTS: '3', NOTICE_BACKOFF_MS: '20' } });
});
afterAll(async () => {
  await harness.close();
  await receiver.close();
});

test('a hand-off whose notices were never queued (the process died) is notified once when a worker starts', async () => {
  await expect(openStrandedHandoff(harness, teamsJson, 'whatsapp:+447700906401')).rejects.toThrow('process killed');
  const [stranded] = await harness.services.handoffs.list({ status: 'open', limit: 10 });
  expect(stranded?.notices.map((notice) => notice.status)).toEqual(['pending', 'pending']);

  const worker = harness.services.startWorker();
  await worker.waitUntilReady();

  await eventually(() => harness.twilio.messages.some((message) => message.to === SALES_PHONE) && receiver.received.length > 0);
  await eventually(async () => {
    const [handoff] = await harness.services.handoffs.list({ status: 'open', limit: 10 });
    return handoff?.notices.every((notice) => notice.status === 'sent');
  });
  expect(harness.twilio.messages.filter((message) => message.to === SALES_PHONE)).toHaveLength(1);
  expect(harness.twilio.messages[0]?.body).toContain('Demo of the Pro plan for a team of 12');
  expect(receiver.received).toHaveLength(1);
});
