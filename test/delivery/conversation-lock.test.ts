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
import type { TurnQueue } from '../../src/queue/turn-queue.js';
import { createIntakeLedger } from '../../src/queue/intake-ledger.js';
import { redisKeys } from '../../src/queue/keys.js';
import { eventually } from '../support/harness.js';
import { stallEventLoop } from '../support/stall.js';
import { createIntake } from '../../src/turn/intake.js';
import { acquireConversationLock, holdConversationLock, lockRequest } from '../../src/queue/conversation-lock.js';

let redis: Redis;
beforeAll(() => {
  redis = new Redis(process.env.TEST_REDIS_URL ?? '');
});
afterAll(() => redis.quit());

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

  test('a holder whose fence tripped before its key expired frees the key when it lets go', async () => {
    const conversationKey = `lock-test:${randomUUID()}`;
    const lock = await acquireConversationLock(redis, conversationKey, 5000, () => undefined);
    // Just past the fence (the TTL less its 1 s margin), counted from the fence itself so that a
    // slow acquisition on a busy machine doesn't eat the margin: the key is still this holder's.
    stallEventLoop((lock?.heldUntil ?? 0) - Date.now() + 20);
    expect(lock?.held).toBe(false);
    expect(await redis.pttl(redisKeys.lock(conversationKey))).toBeGreaterThan(0);
    await lock?.release();
    // Its job's retry, a moment later, must find the conversation free, not left to a holder that gave up.
    expect(await redis.exists(redisKeys.lock(conversationKey))).toBe(0);
    const next = await acquireConversationLock(redis, conversationKey, 1500, () => undefined);
    expect(next?.held).toBe(true);
    await next?.release();
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

  test('the holder’s acknowledgement reads the next batch in the same step, with no turn state left to it', async () => {
    const conversationKey = `lock-test:${randomUUID()}`;
    const inbox = createConversationInbox(redis);
    await inbox.accept(message(conversationKey, 'm1'));
    const request = lockRequest(conversationKey, 5000);
    const first = await inbox.lockAndBatch(conversationKey, 1, request);
    const lock = holdConversationLock(redis, request, () => undefined);
    const read = first.batch();
    if (!read) throw new Error('no batch');
    expect(read.stateless).toBe(true);
    // A batch read with no turn state is frozen and marked running without a check of the state.
    const batch = await inbox.freeze(conversationKey, read, 'process|token');
    expect(await redis.hgetall(redisKeys.retry(conversationKey))).toEqual({ size: '1', running: 'process|token', messageId: 'm1' });
    await inbox.accept(message(conversationKey, 'm2'));
    await inbox.accept(message(conversationKey, 'm3'));
    // The customer types meanwhile: a batch that may coalesce reads the report with it.
    await inbox.reportTyping(conversationKey, 5000);
    const acknowledged = await lock.releaseWith(async (token) => {
      const result = await inbox.acknowledgeAndBatch(conversationKey, batch, token, 5);
      return { released: result.released, value: result };
    });
    expect(acknowledged.released).toBe(false);
    expect(lock.held).toBe(true);
    const next = acknowledged.batch?.();
    expect(next?.entries.map((entry) => entry.message.messageId)).toEqual(['m2', 'm3']);
    expect(next).toMatchObject({ frozen: false, stateless: true, crashes: 0, behind: 0 });
    expect(next?.typingAt).toEqual(expect.any(Number));
    expect(await redis.exists(redisKeys.retry(conversationKey))).toBe(0);
    if (!next) throw new Error('no batch');
    // The last batch: its acknowledgement frees the lock and reads nothing.
    const frozen = await inbox.freeze(conversationKey, next, 'process|token');
    const last = await lock.releaseWith(async (token) => {
      const result = await inbox.acknowledgeAndBatch(conversationKey, frozen, token, 5);
      return { released: result.released, value: result };
    });
    expect(last).toEqual({ released: true });
    expect(lock.held).toBe(false);
    expect(await inbox.size(conversationKey)).toBe(0);
  });

  test('a batch read with another head’s turn state left behind is frozen clean of it', async () => {
    const conversationKey = `lock-test:${randomUUID()}`;
    const inbox = createConversationInbox(redis);
    await inbox.accept(message(conversationKey, 'm1'));
    await redis.hset(redisKeys.retry(conversationKey), { messageId: 'gone', crashes: '1', attempts: '3' });
    const read = await inbox.batch(conversationKey, 1);
    if (!read) throw new Error('no batch');
    expect(read).toMatchObject({ stateless: false, crashes: 0 });
    expect(read.typingAt).toBeUndefined();
    await inbox.freeze(conversationKey, read, 'process|token');
    expect(await redis.hgetall(redisKeys.retry(conversationKey))).toEqual({ size: '1', running: 'process|token', messageId: 'm1' });
  });

  test('messages need a job of their own only when no job is queued and nobody holds the conversation', async () => {
    const conversationKey = `lock-test:${randomUUID()}`;
    const inbox = createConversationInbox(redis);
    expect(await inbox.accept(message(conversationKey, 'm1'))).toBe('appended');
    // m1's job has not run yet: it will read m2 too.
    expect(await inbox.accept(message(conversationKey, 'm2'))).toBe('queued');
    expect(await inbox.accept(message(conversationKey, 'm2'))).toBe('duplicate');
    const request = lockRequest(conversationKey, 5000);
    const first = await inbox.lockAndBatch(conversationKey, 5, request);
    expect(first.acquired).toBe(true);
    expect(first.batch()?.entries.map((entry) => entry.message.messageId)).toEqual(['m1', 'm2']);
    const lock = holdConversationLock(redis, request, () => undefined);
    // The job tried the lock: from now on its holder reads on.
    expect(await inbox.accept(message(conversationKey, 'm3'))).toBe('held');
    await lock.release();
    // Nobody holds it and no job is queued: the next message gets its job.
    expect(await inbox.accept(message(conversationKey, 'm4'))).toBe('appended');
    // A job that could not be added clears its mark, so the next message is not left waiting on it.
    await inbox.unmarkQueued(conversationKey);
    expect(await inbox.accept(message(conversationKey, 'm5'))).toBe('appended');
  });

  test('an enqueue that failed leaves no mark, and its note until a job exists: the next message gets its own job', async () => {
    const conversationKey = `lock-test:${randomUUID()}`;
    const inbox = createConversationInbox(redis);
    const added = new Set<string>();
    const tried: string[] = [];
    let failing = true;
    const queue = {
      add: async (_name: string, job: { messageId: string }) => {
        tried.push(job.messageId);
        if (failing) throw new Error('Redis refused the job (test)');
        added.add(job.messageId);
      },
    } as unknown as TurnQueue;
    const ledger = createIntakeLedger(redis, `{test-${randomUUID()}}`);
    const intake = createIntake(inbox, queue, ledger);
    // The intake ledger's notes of this conversation (what a sweeper would add a job for).
    const noted = async () => (await ledger.stale(Date.now() + 1)).filter((note) => note.conversationKey === conversationKey).map((note) => note.messageId);
    // In its inbox and noted: accepted, whatever becomes of its job's add.
    expect(await intake.accept(message(conversationKey, 'm1'))).toBe('accepted');
    await eventually(() => tried.includes('m1') || undefined);
    // The failed add cleared the queued mark; m1 has no job, so its note stays.
    await eventually(async () => (await redis.exists(redisKeys.queued(conversationKey))) === 0 || undefined);
    expect(await noted()).toEqual(['m1']);
    failing = false;
    expect(await intake.accept(message(conversationKey, 'm2'))).toBe('accepted');
    await eventually(() => added.has('m2') || undefined);
    // The sender's retry of m1 (a duplicate now) adds its job too; then no note is left.
    expect(await intake.accept(message(conversationKey, 'm1'))).toBe('duplicate');
    await eventually(async () => (added.has('m1') && (await noted()).length === 0) || undefined);
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
