/**
 * A message the service gives up on goes to a person, never back to the customer as "please
 * send it again": with the model down past MESSAGE_RETRY_BUDGET_MS, the conversation is handed
 * to its role's team (the notice carries the unanswered message) and the customer is told a
 * person will answer here. Still one message per outage, recorded failed and counted. On real
 * Redis and FerretDB, the fake Twilio API and the deterministic model failing its reply calls.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { inboundMessageId } from '../../src/store/transcript-store.js';
import { HOLDING_NOTICE_TEXT } from '../../src/turn/holding-notice.js';
import { eventually, newMessageSid, startHarness, type Harness } from '../support/harness.js';
import { turnsSettled } from '../support/settled.js';

const MEMBER = 'whatsapp:+34600916001';
const HANDED_OVER =
  "Sorry — something went wrong on our side and we couldn't answer your last message, so we've passed it to our Support team: a person will answer you here.";

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness({
    script: () => ({ error: new Error('upstream 503') }),
    env: {
      MESSAGE_RETRY_BUDGET_MS: '2500',
      MESSAGE_RETRY_BACKOFF_MS: '100',
      NOTICE_BACKOFF_MS: '20',
      HANDOFF_TEAMS: JSON.stringify({
        support: { label: 'Support team', members: [{ name: 'Ana', whatsapp: MEMBER }], responseTime: 'within two hours' },
      }),
    },
  });
});
afterAll(() => harness.close());

test('past its retry budget a message goes to the role’s team and the customer is told a person will answer', async () => {
  const customer = 'whatsapp:+447700916001';
  const messageSid = newMessageSid();
  await harness.sendWhatsapp({ from: customer, body: 'my login is broken', messageSid });

  const notice = await eventually(() => harness.twilio.messages.find((message) => message.to === MEMBER), 20_000);
  expect(notice.body).toMatch(/^New hand-off to Support team/);
  expect(notice.body).toContain('Customer: my login is broken');
  await eventually(() => harness.twilio.messages.find((message) => message.to === customer && message.body !== HOLDING_NOTICE_TEXT), 20_000);
  await turnsSettled(harness.services);

  const said = harness.twilio.messages.filter((message) => message.to === customer && message.body !== HOLDING_NOTICE_TEXT).map((message) => message.body);
  expect(said).toEqual([HANDED_OVER]);
  expect(harness.twilio.messages.map((message) => message.body).join('\n')).not.toMatch(/send it again/i);
  const [handoff] = await harness.services.handoffs.list({ limit: 5 });
  expect(handoff).toMatchObject({ team: 'support', status: 'open', roleId: 'support', conversationId: customer });
  expect(handoff?.lastMessages.at(-1)).toEqual({ direction: 'inbound', text: 'my login is broken' });
  expect(await harness.services.transcripts.messages.findById(inboundMessageId('whatsapp', messageSid)).lean()).toMatchObject({
    status: 'failed',
    errorMessage: expect.stringContaining('given up on (budget)'),
  });
  expect(harness.services.metrics.value('inbound_failed_total', { channel: 'whatsapp', reason: 'budget' })).toBe(1);
  expect(harness.services.metrics.value('inbound_handed_over_total', { channel: 'whatsapp' })).toBe(1);
}, 60_000);
