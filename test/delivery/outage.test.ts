/**
 * Provider outages during a burst from 8 numbers: a Twilio window answering 500 then 429, and
 * the database (FerretDB, its own instance) killed and restarted. Each message must be answered
 * exactly once and in order after the outage — nothing given up on, nothing sent twice. Short
 * retry delays come from configuration; the budget is far longer than the outage.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { startRestartableFerretDb, type RestartableMongoHandle } from '../support/services.js';
import { burstMessages, countDeliveries, recordFigures, sendBurst } from './burst.js';

const RETRY_ENV = { MESSAGE_RETRY_BUDGET_MS: '60000', MESSAGE_RETRY_BACKOFF_MS: '250' };
const answer = (body: string) => `answer to ${body}`;
const script = ({ userText }: { userText: string }) => ({ text: answer(userText) });

describe('a Twilio outage (500, then 429) during a burst', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness({ env: RETRY_ENV, script });
  });
  afterAll(() => harness.close());

  test('every message is answered exactly once, in order, after it', async () => {
    const burst = burstMessages(8, 5, '1');
    harness.twilio.failDuring(7_500, 500);
    harness.twilio.failDuring(7_500, 429);
    const outageEndsAt = Date.now() + 15_000;
    await sendBurst(harness, burst, 300);
    await eventually(() => harness.twilio.messages.length >= 40 || undefined, 60_000);
    // Anything sent twice would arrive right behind the last answer.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const count = countDeliveries(harness.twilio, burst, answer);
    const refused = harness.twilio.requests.filter((request) => request.status === 500 || request.status === 429).length;
    await recordFigures('twilio-outage', {
      outageMs: 15_000,
      messages: count.expected,
      lost: count.lost,
      duplicated: count.duplicated,
      outOfOrder: count.outOfOrder,
      refusedRequests: refused,
      recoverMs: count.lastReplyAt - outageEndsAt,
      givenUp: harness.services.metrics.value('inbound_failed_total', { channel: 'whatsapp', reason: 'budget' }),
    });
    expect(refused).toBeGreaterThan(0);
    expect(count).toMatchObject({ lost: 0, duplicated: 0, outOfOrder: 0 });
    expect(harness.twilio.messages).toHaveLength(40);
    expect(harness.logs.filter((line) => line.event === 'inbound-failed')).toEqual([]);
  }, 90_000);
});

describe('the database killed for 10 s and restarted during a burst', () => {
  let harness: Harness;
  let database: RestartableMongoHandle;
  beforeAll(async () => {
    database = await startRestartableFerretDb();
    harness = await startHarness({ env: { ...RETRY_ENV, MONGODB_URI: `${database.uri}outage` }, script });
  });
  afterAll(async () => {
    await harness.close();
    await database.stop();
  });

  test('every message is answered exactly once, in order, after it', async () => {
    const burst = burstMessages(8, 5, '2');
    const sending = sendBurst(harness, burst, 300);
    await eventually(() => harness.twilio.messages.length >= 4 || undefined, 20_000);
    const killedAt = Date.now();
    await database.kill();
    await new Promise((resolve) => setTimeout(resolve, 10_000));
    await database.restart();
    const restartedAt = Date.now();
    await sending;
    await eventually(() => harness.twilio.messages.length >= 40 || undefined, 60_000).catch(async (error: unknown) => {
      // What the service said about it, for whoever reads the failure.
      await recordFigures('database-restart-failure', {
        count: countDeliveries(harness.twilio, burst, answer),
        logs: harness.logs.filter((line) => line.level !== 'debug' || ['inbound-acknowledged', 'reply-stored'].includes(line.event)),
      });
      throw error;
    });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const count = countDeliveries(harness.twilio, burst, answer);
    await recordFigures('database-restart', {
      downMs: restartedAt - killedAt,
      messages: count.expected,
      lost: count.lost,
      duplicated: count.duplicated,
      outOfOrder: count.outOfOrder,
      recoverMs: count.lastReplyAt - restartedAt,
      retries: harness.logs.filter((line) => line.event === 'inbound-retrying').length,
      resolvedByLookup: harness.logs.filter((line) => line.event === 'reply-part-resolved').map((line) => line.outcome),
    });
    expect(count).toMatchObject({ lost: 0, duplicated: 0, outOfOrder: 0 });
    expect(harness.twilio.messages).toHaveLength(40);
    expect(harness.logs.filter((line) => line.event === 'inbound-failed')).toEqual([]);
  }, 120_000);
});
