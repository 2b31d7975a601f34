/**
 * Recent history after Redis lost its data. A turn reads its history only from Redis; since the
 * hot path, MongoDB's conversation documents no longer carry it, but the transcript writer puts
 * every message in MongoDB. So a conversation that started on this version, whose Redis was
 * flushed, must get its history back from those messages when the service restarts: its next
 * turn's model sees the earlier exchanges in order, without a message that was given up on or
 * the apology for it.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { transcriptKeys } from '../../src/store/transcript-keys.js';
import { APOLOGY_TEXT } from '../../src/turn/handle-inbound.js';
import type { ScriptedCall } from '../support/deterministic-model.js';
import { TEST_ACCOUNT_SID, TEST_AUTH_TOKEN, eventually, startHarness, type Harness } from '../support/harness.js';
import { startFakeTwilio } from '../support/fake-twilio.js';
import { startRedis, type RedisHandle } from '../support/services.js';
import { transcriptsWritten, turnsSettled } from '../support/settled.js';

const customer = 'whatsapp:+447700932001';
const script = (call: ScriptedCall) => ({ text: `Answer to: ${call.userText}` });

let redis: RedisHandle;
let twilio: Awaited<ReturnType<typeof startFakeTwilio>>;
beforeAll(async () => {
  // A Redis of its own: this suite flushes it.
  redis = await startRedis();
  twilio = await startFakeTwilio({ accountSid: TEST_ACCOUNT_SID, authToken: TEST_AUTH_TOKEN });
});
afterAll(async () => {
  await twilio.close();
  await redis.stop();
});

async function say(harness: Harness, text: string, reply = `Answer to: ${text}`) {
  expect((await harness.sendWhatsapp({ from: customer, body: text })).status).toBe(200);
  await eventually(() => twilio.messages.some((message) => message.to === customer && message.body === reply) || undefined, 20_000);
  await turnsSettled(harness.services);
}

// The service on its own Redis (not on `npm run test:cluster`'s cluster).
(process.env.TEST_REDIS_CLUSTER_NODES ? describe.skip : describe)('a conversation whose Redis lost its data', () => {
  test("is rebuilt from MongoDB's messages when the service restarts: the next turn's model sees its history", async () => {
    const first = await startHarness({ script, twilio, env: { REDIS_URL: redis.url } });
    await say(first, 'My order 5521 never arrived');
    // Given up on (Twilio refuses its reply for good): out of the history, and so is its apology.
    twilio.failMatching((body) => body === 'Answer to: refused', 400);
    await say(first, 'refused', APOLOGY_TEXT);
    await say(first, 'Any news from the courier?');
    await transcriptsWritten(first.services);
    // Stopped without dropping its database; then Redis loses everything.
    await first.services.close();
    const flush = new Redis(redis.url);
    await flush.flushall();
    flush.disconnect();

    const second = await startHarness({ script, twilio, env: { REDIS_URL: redis.url, MONGODB_URI: first.env.MONGODB_URI ?? '' } });
    try {
      await eventually(() => second.logs.find((line) => line.event === 'recent-backfill-done'), 30_000);
      expect(JSON.parse((await second.services.redis.hget(transcriptKeys.conversation(conversationKeyFor(customer)), 'recent')) ?? '[]')).toHaveLength(4);
      await say(second, 'Did it go out today?');
      const [call] = second.models.replyCalls().filter((entry) => entry.userMessages.includes('Did it go out today?'));
      expect(call?.userMessages.filter((message) => !message.startsWith('<customer-context>'))).toEqual([
        'My order 5521 never arrived',
        'Any news from the courier?',
        'Did it go out today?',
      ]);
      expect(call?.promptText).toContain('Answer to: Any news from the courier?');
      expect(call?.promptText.indexOf('Answer to: My order 5521 never arrived')).toBeLessThan(call?.promptText.indexOf('Any news from the courier?') ?? -1);
      expect(call?.promptText).not.toContain('refused');
      expect(call?.promptText).not.toContain(APOLOGY_TEXT);
    } finally {
      await second.close();
    }
  }, 90_000);
});
