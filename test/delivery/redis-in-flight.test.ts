/**
 * What a Redis restart does to the commands in flight, one fault at a time (the restart itself is
 * `redis-restart.test.ts`): a server shut down right after executing a command never answers it,
 * and the client sends it again once reconnected (or, when the server stays away, gives up on it
 * with the command already run); a worker's own commands fail while its lock stays in Redis. A
 * message must still be answered, once.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { redisKeys } from '../../src/queue/keys.js';
import { eventually, logsAbout, startHarness, type Harness } from '../support/harness.js';
import { startQueueRig } from '../support/queue-rig.js';
import { startRedisFaultProxy, type RedisFaultProxy } from '../support/redis-fault-proxy.js';
import { startRedis, type RedisHandle } from '../support/services.js';

/** A `SET` of `key` (the conversation lock's request is one). */
const isSetOf = (key: string) => (command: string) => /^\*\d+\r\n\$3\r\nset\r\n/i.test(command) && command.includes(`\r\n${key}\r\n`);

describe('a lock claim Redis ran but never answered', () => {
  let redis: RedisHandle;
  let proxy: RedisFaultProxy;
  let harness: Harness;
  beforeAll(async () => {
    redis = await startRedis();
    proxy = await startRedisFaultProxy(redis.url);
    harness = await startHarness({ env: { REDIS_URL: proxy.url }, script: ({ userText }) => ({ text: `answer to ${userText}` }) });
  });
  afterAll(async () => {
    await harness.close();
    await proxy.close();
    await redis.stop();
  });

  test('is the claimant’s when its request is sent again: the message is answered once', async () => {
    const from = 'whatsapp:+447700931501';
    const conversationKey = conversationKeyFor(from);
    proxy.loseReplyTo(isSetOf(redisKeys.lock(conversationKey)));
    expect((await harness.sendWhatsapp({ from, body: 'hello' })).status).toBe(200);
    const answers = () => harness.twilio.messages.filter((message) => message.to === from).map((message) => message.body);
    await eventually(
      () => answers().length > 0 || undefined,
      15_000,
      () => `lost replies: ${proxy.lostReplies()}\n${logsAbout(harness.logs, harness.logId(conversationKey))}`,
    );
    expect(proxy.lostReplies()).toBe(1);
    // Anything sent twice would arrive right behind the answer.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(answers()).toEqual(['answer to hello']);
  });
});

describe('a turn job whose attempt failed while its worker could not reach Redis', () => {
  test('comes back when the lock that attempt left behind expires, and the message is answered', async () => {
    const testRedisUrl = process.env.TEST_REDIS_URL;
    if (!testRedisUrl) throw new Error('global-setup did not publish TEST_REDIS_URL');
    const proxy = await startRedisFaultProxy(testRedisUrl);
    const answered: string[] = [];
    let turns = 0;
    // The worker's inbox and lock go through the proxy (BullMQ does not): its first turn loses
    // Redis mid-way, so its failure can be neither recorded nor its lock freed, and the job's
    // attempt fails with the lock still in Redis (8 s: it outlives the attempt by far).
    const rig = await startQueueRig({
      workerRedisUrl: proxy.url,
      lockTtlMs: 8_000,
      retryBackoffMs: 100,
      handle: async (batch) => {
        turns += 1;
        if (turns === 1) {
          await proxy.cut();
          throw new Error('Redis went away mid-turn');
        }
        answered.push(batch.message.text);
      },
      giveUp: async () => undefined,
    });
    try {
      const key = `whatsapp:+4477009315${String(Date.now() % 100).padStart(2, '0')}`;
      await rig.send(key, 'first');
      await eventually(() => rig.logs.find((line) => line.event === 'turn-job-failed'), 30_000);
      // Redis is back for the worker; the lock its failed attempt took is still there.
      await proxy.restore();
      expect(await rig.redis.exists(redisKeys.lock(key))).toBe(1);
      await eventually(
        () => answered.includes('first') || undefined,
        20_000,
        () => logsAbout(rig.logs, key),
      );
      expect(answered).toEqual(['first']);
    } finally {
      await rig.close();
      await proxy.close();
    }
  }, 60_000);
});
