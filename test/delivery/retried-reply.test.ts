/**
 * A reply whose first send was refused transiently is delivered by a retried attempt, which
 * resumes from the stored parts instead of running the turn again. What follows a delivered
 * reply — the role's evidence facts, `afterTurn`, the KPI line, the turn's metering — must
 * still happen, exactly once, although the attempt that delivered it never ran the model.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { eventually, newMessageSid, startHarness, type Harness } from '../support/harness.js';

const script = ({ userText }: { userText: string }) => ({ text: `Answer to: ${userText}` });

describe('a reply delivered by a retried attempt', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness({ script, env: { MESSAGE_RETRY_BACKOFF_MS: '100' } });
  });
  afterAll(() => harness.close());

  test('still gets its post-turn step, once', async () => {
    const customer = 'whatsapp:+447700906001';
    const messageSid = newMessageSid();
    harness.twilio.failNext(1, 500);
    await harness.sendWhatsapp({ from: customer, body: 'hello there', messageSid });
    await eventually(() => harness.twilio.messages.some((message) => message.body === 'Answer to: hello there') || undefined, 15_000);
    expect(harness.logs).toContainEqual(expect.objectContaining({ event: 'reply-resumed', messageId: messageSid }));
    // A later message is answered after this one's post-turn step (the conversation is serialised).
    await harness.sendWhatsapp({ from: customer, body: 'second' });
    await eventually(() => harness.twilio.messages.some((message) => message.body === 'Answer to: second') || undefined, 15_000);
    await eventually(() => (harness.logs.filter((line) => line.event === 'turn-kpi').length >= 2 ? true : undefined), 15_000);
    const kpis = harness.logs.filter((line) => line.event === 'turn-kpi');
    expect(kpis).toHaveLength(2);
    expect(kpis.every((line) => line.delivered === true)).toBe(true);
  }, 30_000);
});
