/**
 * The typing indicator is best effort: when Twilio's typing endpoint fails, the customer
 * still gets the reply, once, and the failure is a warning in the log — nothing else.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { newMessageSid, startHarness, TEST_ACCOUNT_SID, TEST_AUTH_TOKEN, type Harness } from '../support/harness.js';
import { startFakeTwilio } from '../support/fake-twilio.js';
import { turnsSettled } from '../support/settled.js';
import { startTwilioFront, type TwilioFront } from '../support/twilio-front.js';

const TYPING_PATH = '/v2/Indicators/Typing.json';

let twilio: TwilioFront;
let harness: Harness;

beforeAll(async () => {
  const fake = await startFakeTwilio({ accountSid: TEST_ACCOUNT_SID, authToken: TEST_AUTH_TOKEN });
  twilio = await startTwilioFront(fake, (method, path) => (method === 'POST' && path === TYPING_PATH ? 500 : undefined));
  harness = await startHarness({ twilio, script: () => ({ text: 'We open at nine.' }) });
});
afterAll(async () => {
  await harness.close();
  await twilio.close();
});

test('a typing indicator Twilio answers with 500 blocks nothing: the reply arrives once, the failure is logged', async () => {
  const messageSid = newMessageSid();
  await harness.sendWhatsapp({ from: 'whatsapp:+447700906201', body: 'when do you open?', messageSid });
  const [reply] = await harness.twilio.waitForMessages(1);
  await turnsSettled(harness.services);

  expect(twilio.intercepted).toContain(TYPING_PATH);
  expect(harness.twilio.typingIndicators).toEqual([]);
  expect(reply).toMatchObject({ to: 'whatsapp:+447700906201', body: 'We open at nine.' });
  expect(harness.twilio.messages).toHaveLength(1);
  expect(harness.logs).toContainEqual(expect.objectContaining({ level: 'warn', event: 'typing-indicator-failed', messageSid }));
});
