/**
 * A message that arrives while its conversation's turn is running adds no job of its own: the
 * worker holding the conversation answers it before it lets the conversation go (the lock is
 * freed only in the step that empties the inbox). The customer still gets every answer, once
 * and in order — and the queue did not run a job that could only have found the lock taken.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { eventually, newMessageSid, startHarness, type Harness } from '../support/harness.js';
import { turnsSettled } from '../support/settled.js';

describe('a message arriving while its conversation is being answered', () => {
  let harness: Harness;
  let reachedFirst: () => void = () => undefined;
  const firstStarted = new Promise<void>((resolve) => (reachedFirst = resolve));
  let releaseFirst: () => void = () => undefined;
  const firstMayAnswer = new Promise<void>((resolve) => (releaseFirst = resolve));

  beforeAll(async () => {
    harness = await startHarness({
      script: async ({ userText }) => {
        if (userText === 'first') {
          reachedFirst();
          await firstMayAnswer;
        }
        return { text: `answer to ${userText}` };
      },
    });
  });
  afterAll(() => harness.close());

  test('is answered by the running turn’s worker, after the first, without a job of its own', async () => {
    const customer = 'whatsapp:+447700907001';
    await harness.sendWhatsapp({ from: customer, body: 'first' });
    await firstStarted;
    const secondSid = newMessageSid();
    expect((await harness.sendWhatsapp({ from: customer, body: 'second', messageSid: secondSid })).status).toBe(200);
    const jobId = `${conversationKeyFor(customer)}|${secondSid}`.replace(/:/g, '_');
    expect(await harness.services.queue.getJob(jobId)).toBeUndefined();
    releaseFirst();
    await eventually(() => (harness.twilio.messages.filter((message) => message.to === customer).length >= 2 ? true : undefined), 15_000);
    await turnsSettled(harness.services);
    expect(harness.twilio.messages.filter((message) => message.to === customer).map((message) => message.body)).toEqual([
      'answer to first',
      'answer to second',
    ]);
  }, 30_000);
});
