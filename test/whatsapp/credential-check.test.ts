/**
 * The Twilio credentials checked at start, against the fake Twilio API: accepted is an info line
 * and a ready check; refused is one error line naming the variables and the `whatsapp` readiness
 * check failing (degraded); Twilio not reached is one warning that says "could not reach", and
 * so does a reply sent while it can't be reached (never "refused").
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startTwilioCheck } from '../../channels/whatsapp/credential-check.js';
import { createWhatsappChannel } from '../../channels/whatsapp/index.js';
import { createLogger } from '../../src/logger.js';
import { TEST_ACCOUNT_SID, TEST_AUTH_TOKEN } from '../support/harness.js';
import { startFakeTwilio, type FakeTwilio } from '../support/fake-twilio.js';
import { findFreePort } from '../support/services.js';

let twilio: FakeTwilio;
beforeAll(async () => {
  twilio = await startFakeTwilio({ accountSid: TEST_ACCOUNT_SID, authToken: TEST_AUTH_TOKEN });
});
afterAll(() => twilio.close());

function capture() {
  const lines: Record<string, unknown>[] = [];
  return { lines, logger: createLogger({ level: 'debug', sink: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) }) };
}

describe('the Twilio credentials at start', () => {
  test('accepted: one info line, ready', async () => {
    const { lines, logger } = capture();
    const check = startTwilioCheck({ accountSid: TEST_ACCOUNT_SID, authToken: TEST_AUTH_TOKEN, apiBaseUrl: twilio.baseUrl }, logger);
    expect((await check.done).state).toBe('ok');
    expect(lines.map((line) => [line.level, line.event])).toEqual([['info', 'twilio-credentials-ok']]);
    await expect(check.readiness.check()).resolves.toBeUndefined();
  });

  test('refused: one error line naming the variables, and /readyz degraded', async () => {
    const { lines, logger } = capture();
    const check = startTwilioCheck({ accountSid: TEST_ACCOUNT_SID, authToken: 'not-the-token', apiBaseUrl: twilio.baseUrl }, logger);
    // Fine while the check runs: it never holds readiness back.
    await expect(check.readiness.check()).resolves.toBeUndefined();
    expect(await check.done).toMatchObject({ state: 'refused', status: 401 });
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'error',
        event: 'twilio-credentials-refused',
        status: 401,
        problem: "Twilio refused TWILIO_ACCOUNT_SID / TWILIO_AUTH_TOKEN (401): set the account's SID and auth token from the Twilio console",
      }),
    ]);
    expect(JSON.stringify(lines)).not.toContain('not-the-token');
    expect(check.readiness).toMatchObject({ name: 'whatsapp', degradable: true });
    await expect(check.readiness.check()).rejects.toThrow('Twilio refused TWILIO_ACCOUNT_SID / TWILIO_AUTH_TOKEN (401)');
  });

  test('not reached: one warning saying "could not reach", still ready; a reply then fails with the same words, not "refused"', async () => {
    const closed = `http://127.0.0.1:${await findFreePort()}`;
    const { lines, logger } = capture();
    const check = startTwilioCheck({ accountSid: TEST_ACCOUNT_SID, authToken: TEST_AUTH_TOKEN, apiBaseUrl: closed }, logger);
    expect((await check.done).state).toBe('unreachable');
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'warn',
        event: 'twilio-unreachable',
        problem: `could not reach Twilio at ${closed} (ECONNREFUSED): WhatsApp replies fail until it can be reached`,
      }),
    ]);
    await expect(check.readiness.check()).resolves.toBeUndefined();

    const channel = createWhatsappChannel({
      accountSid: TEST_ACCOUNT_SID,
      authToken: TEST_AUTH_TOKEN,
      from: 'whatsapp:+14155238886',
      apiBaseUrl: closed,
      statusCallbackUrl: 'https://assistant.example.com/webhooks/whatsapp/status',
      logger,
    });
    const inbound = {
      channel: 'whatsapp',
      conversationKey: 'whatsapp:+15550001111',
      messageId: 'SM-credential-check',
      from: { address: 'whatsapp:+15550001111' },
      text: 'hello',
      receivedAt: Date.now(),
      metadata: {},
    };
    await expect(channel.transport.send(inbound, 'hi there', 1)).rejects.toThrow(/^Could not reach Twilio: .*ECONNREFUSED/);
  });
});
