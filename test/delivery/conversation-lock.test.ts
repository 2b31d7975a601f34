/**
 * The conversation lock as a fence: a holder whose event loop stalls past the lock's TTL (a GC
 * pause, a CPU-starved host) must learn that it lost the lock the moment it looks, before any
 * renewal timer had a chance to run — or two workers would both believe they hold one
 * conversation, and both send.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import type { InboundMessage } from '../../src/contracts/index.js';
import { createConversationInbox } from '../../src/queue/conversation-inbox.js';
import { acquireConversationLock, holdConversationLock, lockRequest } from '../../src/queue/conversation-lock.js';

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

describe('the acknowledgement that empties the inbox frees the lock in the same step', () => {
  const message = (conversationKey: string, messageId: string): InboundMessage => ({
    channel: 'whatsapp',
    conversationKey,
    messageId,
    from: { address: conversationKey },
    text: messageId,
    receivedAt: Date.now(),
    metadata: {},
  });

  test('an empty inbox: the lock is freed with the batch, so the next message finds it free', async () => {
    const conversationKey = `lock-test:${randomUUID()}`;
    const inbox = createConversationInbox(redis);
    await inbox.accept(message(conversationKey, 'm1'));
    const request = lockRequest(conversationKey, 5000);
    const first = await inbox.lockAndBatch(conversationKey, 5, request);
    expect(first.acquired).toBe(true);
    const lock = holdConversationLock(redis, request, () => undefined);
    const batch = first.batch();
    if (!batch) throw new Error('no batch');
    expect(await lock.releaseWith(async (token) => ({ released: await inbox.acknowledge(conversationKey, batch, token), value: true }))).toBe(true);
    expect(lock.held).toBe(false);
    expect(await inbox.size(conversationKey)).toBe(0);
    const next = await acquireConversationLock(redis, conversationKey, 5000, () => undefined);
    expect(next?.held).toBe(true);
    await next?.release();
  });

  test('a message that arrived during the turn keeps the lock with its holder, who answers it next', async () => {
    const conversationKey = `lock-test:${randomUUID()}`;
    const inbox = createConversationInbox(redis);
    await inbox.accept(message(conversationKey, 'm1'));
    const request = lockRequest(conversationKey, 5000);
    const first = await inbox.lockAndBatch(conversationKey, 5, request);
    const lock = holdConversationLock(redis, request, () => undefined);
    const batch = first.batch();
    if (!batch) throw new Error('no batch');
    // Arrives mid-turn: its job finds the lock taken and leaves the message to the holder.
    await inbox.accept(message(conversationKey, 'm2'));
    const released = await lock.releaseWith(async (token) => {
      const freed = await inbox.acknowledge(conversationKey, batch, token);
      return { released: freed, value: freed };
    });
    expect(released).toBe(false);
    expect(lock.held).toBe(true);
    expect(await acquireConversationLock(redis, conversationKey, 5000, () => undefined)).toBeUndefined();
    expect((await inbox.batch(conversationKey, 5))?.entries.map((entry) => entry.message.messageId)).toEqual(['m2']);
    await lock.release();
  });

  test('a holder that lost the lock never frees the next holder’s lock by acknowledging', async () => {
    const conversationKey = `lock-test:${randomUUID()}`;
    const inbox = createConversationInbox(redis);
    await inbox.accept(message(conversationKey, 'm1'));
    const batch = await inbox.batch(conversationKey, 5);
    if (!batch) throw new Error('no batch');
    const other = await acquireConversationLock(redis, conversationKey, 5000, () => undefined);
    expect(await inbox.acknowledge(conversationKey, batch, 'a-lost-token')).toBe(false);
    expect(await acquireConversationLock(redis, conversationKey, 5000, () => undefined)).toBeUndefined();
    await other?.release();
  });
});
