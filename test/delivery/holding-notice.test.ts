/**
 * The holding message of a model outage goes out once the customer has waited
 * MODEL_HOLDING_NOTICE_MS, not a whole retry later: the decision is taken where the failed
 * message's next attempt is scheduled, so with a retry delay that lands well past the threshold
 * the customer hears from us before that attempt starts. Once, through the send ledger, then the
 * real answer; never when the model is back before the threshold, nor once a teammate holds the
 * conversation. On real Redis and FerretDB,
 * with the deterministic model failing its reply calls.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createTakeoverStateStore } from '../../src/takeover/takeover-state.js';
import { APOLOGY_TEXT } from '../../src/turn/handle-inbound.js';
import { HOLDING_NOTICE_TEXT } from '../../src/turn/holding-notice.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { turnsSettled } from '../support/settled.js';

const ANSWER = 'The real answer.';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const to = (harness: Harness, customer: string) => harness.twilio.messages.filter((message) => message.to === customer);

/** Reply calls fail (every model down) `failures` times, then answer; returns when each call started. */
function outage(harness: Harness, failures: number): number[] {
  const startedAt: number[] = [];
  let left = failures;
  harness.models.setScript(() => {
    startedAt.push(Date.now());
    return left-- > 0 ? { error: new Error('upstream 503') } : { text: ANSWER };
  });
  return startedAt;
}

describe('a retry delay that lands well past MODEL_HOLDING_NOTICE_MS', () => {
  const HOLDING_MS = 1_000;
  let harness: Harness;
  beforeAll(async () => {
    // The first retry starts 4 s after the first failure, the second 8 s after the first retry's.
    harness = await startHarness({ env: { MODEL_HOLDING_NOTICE_MS: String(HOLDING_MS), MESSAGE_RETRY_BACKOFF_MS: '4000' } });
  });
  afterAll(() => harness.close());

  test('the holding message goes out at the threshold, before the next attempt starts; once, then the real answer', async () => {
    const attempts = outage(harness, 2);
    const customer = 'whatsapp:+447700903001';
    const sentAt = Date.now();
    await harness.sendWhatsapp({ from: customer, body: 'where is my parcel?' });
    const [holding] = await eventually(() => (to(harness, customer).length > 0 ? to(harness, customer) : undefined), 20_000);
    expect(holding?.body).toBe(HOLDING_NOTICE_TEXT);
    // Not before the customer has waited the threshold, and not a retry later: before the second attempt.
    expect(holding?.receivedAt).toBeGreaterThanOrEqual(sentAt + HOLDING_MS);
    expect(attempts).toHaveLength(1);
    // The second attempt fails too (past the threshold: the holding message is not sent again), the third answers.
    await eventually(() => (to(harness, customer).length >= 2 ? true : undefined), 30_000);
    await turnsSettled(harness.services);
    expect(attempts).toHaveLength(3);
    expect(holding?.receivedAt).toBeLessThan(attempts[1] ?? 0);
    expect(to(harness, customer).map((message) => message.body)).toEqual([HOLDING_NOTICE_TEXT, ANSWER]);
    expect(harness.logs.filter((line) => line.event === 'holding-notice-sent')).toHaveLength(1);
    expect(harness.twilio.messages.map((message) => message.body)).not.toContain(APOLOGY_TEXT);
  }, 60_000);

  test('a teammate who takes the conversation over while the model fails answers it: no holding message', async () => {
    const customer = 'whatsapp:+447700903002';
    const conversationKey = 'whatsapp:+447700903002';
    const takeover = createTakeoverStateStore(harness.services.redis);
    let calls = 0;
    harness.models.setScript(async () => {
      calls += 1;
      // Taken over (on the live page) after the turn found nobody holding it, while its model call fails.
      await takeover.set({
        handoffId: 'h-holding',
        conversationId: conversationKey,
        channel: 'whatsapp',
        team: 'support',
        holderId: 'teammate-sam',
        holderName: 'Sam',
        holderVia: 'page',
        takenAt: Date.now(),
        lastTeammateAt: Date.now(),
      });
      return { error: new Error('upstream 503') };
    });
    await harness.sendWhatsapp({ from: customer, body: 'can someone call me?' });
    await eventually(
      () => harness.logs.find((line) => line.event === 'holding-notice-skipped' && line.conversationKey === harness.logId(conversationKey)),
      20_000,
    );
    // The next attempt relays the message to the holder: no model call, nothing from the assistant.
    await eventually(
      () => harness.logs.find((line) => line.event === 'takeover-customer-relayed' && line.conversationKey === harness.logId(conversationKey)),
      20_000,
    );
    await turnsSettled(harness.services);
    expect(calls).toBe(1);
    expect(to(harness, customer)).toEqual([]);
  }, 60_000);
});

describe('the model back before MODEL_HOLDING_NOTICE_MS', () => {
  // Far beyond two 300 ms retries even on a loaded machine: whether the retries beat it must not depend on its speed.
  const HOLDING_MS = 8_000;
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness({ env: { MODEL_HOLDING_NOTICE_MS: String(HOLDING_MS), MESSAGE_RETRY_BACKOFF_MS: '300' } });
  });
  afterAll(() => harness.close());

  test('no holding message: the retry answers, and nothing follows once the threshold has passed', async () => {
    const attempts = outage(harness, 2);
    const customer = 'whatsapp:+447700903101';
    const sentAt = Date.now();
    await harness.sendWhatsapp({ from: customer, body: 'are you open on Sunday?' });
    await eventually(() => (to(harness, customer).length > 0 ? true : undefined), 20_000);
    // Past the threshold (and then some): nothing was left scheduled to follow the answer.
    await sleep(Math.max(0, sentAt + HOLDING_MS + 1_500 - Date.now()));
    await turnsSettled(harness.services);
    expect(attempts).toHaveLength(3);
    expect(to(harness, customer).map((message) => message.body)).toEqual([ANSWER]);
    expect(harness.logs.filter((line) => line.event === 'holding-notice-sent')).toEqual([]);
  }, 60_000);
});

describe('an outage longer than MESSAGE_RETRY_BUDGET_MS, with several messages waiting', () => {
  const BUDGET_MS = 6_000;
  let harness: Harness;
  beforeAll(async () => {
    // One turn per message (the harness's quiet period is 0): each message is a batch of its own.
    harness = await startHarness({
      env: { MODEL_HOLDING_NOTICE_MS: '300', MESSAGE_RETRY_BUDGET_MS: String(BUDGET_MS), MESSAGE_RETRY_BACKOFF_MS: '200' },
    });
  });
  afterAll(() => harness.close());

  test('the conversation gets one holding message and one apology, all within one budget of its oldest message', async () => {
    harness.models.setScript(() => ({ error: new Error('upstream 503') }));
    const customer = 'whatsapp:+447700903201';
    // Spread out, all three waiting before the budget of the first runs out.
    let lastSentAt = 0;
    for (const body of ['where is my parcel?', 'hello?', 'anyone there?']) {
      if (lastSentAt > 0) await sleep(2_000);
      lastSentAt = Date.now();
      expect((await harness.sendWhatsapp({ from: customer, body })).status).toBe(200);
    }
    await eventually(() => harness.services.metrics.value('inbound_failed_total', { channel: 'whatsapp', reason: 'budget' }) >= 3 || undefined, 30_000);
    await turnsSettled(harness.services);
    const failedAt = harness.logs.filter((line) => line.event === 'inbound-failed').map((line) => Date.parse(String(line.time)));
    expect(failedAt).toHaveLength(3);
    expect(to(harness, customer).map((message) => message.body)).toEqual([HOLDING_NOTICE_TEXT, APOLOGY_TEXT]);
    // The budget counts from the conversation's oldest waiting message: the messages behind it take
    // none of their own (the last would then be given up no sooner than a budget after it was sent).
    expect(Math.max(...failedAt)).toBeLessThan(lastSentAt + BUDGET_MS);
    expect(harness.logs.filter((line) => line.event === 'holding-notice-sent')).toHaveLength(1);
    // The model back: the next message is answered as any.
    harness.models.setScript(() => ({ text: ANSWER }));
    expect((await harness.sendWhatsapp({ from: customer, body: 'are you back?' })).status).toBe(200);
    await eventually(() => (to(harness, customer).length >= 3 ? true : undefined), 20_000);
    expect(to(harness, customer).map((message) => message.body)).toEqual([HOLDING_NOTICE_TEXT, APOLOGY_TEXT, ANSWER]);
  }, 60_000);
});
