/**
 * The conversation lock as a fence: a holder whose event loop stalls past the lock's TTL (a GC
 * pause, a CPU-starved host) must learn that it lost the lock the moment it looks, before any
 * renewal timer had a chance to run — or two workers would both believe they hold one
 * conversation, and both send.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import { acquireConversationLock } from '../../src/queue/conversation-lock.js';

let redis: Redis;
beforeAll(() => {
  redis = new Redis(process.env.TEST_REDIS_URL ?? '');
});
afterAll(() => redis.quit());

/** Blocks the event loop, as a long synchronous task would: no timer or I/O callback runs meanwhile. */
function stallEventLoop(milliseconds: number): void {
  const until = Date.now() + milliseconds;
  while (Date.now() < until) {
    // busy
  }
}

describe('a holder whose event loop stalls past the TTL', () => {
  test('reads the lock as lost at once, so it never holds it together with the next holder', async () => {
    const conversationKey = `lock-test:${randomUUID()}`;
    const lost: string[] = [];
    const first = await acquireConversationLock(redis, conversationKey, 1500, () => lost.push('first'));
    expect(first?.held).toBe(true);
    stallEventLoop(1600);
    // Nothing has run since the stall: the first holder looks before anything else.
    expect(first?.held).toBe(false);
    expect(lost).toEqual(['first']);
    const second = await acquireConversationLock(redis, conversationKey, 1500, () => lost.push('second'));
    expect(second?.held).toBe(true);
    expect(first?.held).toBe(false);
    await first?.release();
    // The first holder's release never frees the second holder's lock.
    expect(await acquireConversationLock(redis, conversationKey, 1500, () => undefined)).toBeUndefined();
    await second?.release();
  });

  test('a holder whose renewals keep succeeding keeps the lock past its TTL', async () => {
    const conversationKey = `lock-test:${randomUUID()}`;
    const lock = await acquireConversationLock(redis, conversationKey, 1500, () => undefined);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(lock?.held).toBe(true);
    expect(await acquireConversationLock(redis, conversationKey, 1500, () => undefined)).toBeUndefined();
    await lock?.release();
    expect(await acquireConversationLock(redis, conversationKey, 1500, () => undefined)).toBeDefined();
  });
});
