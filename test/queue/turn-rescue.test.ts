/**
 * Rescuing a conversation whose job failed for good (`turn-rescue.ts`) on the real Redis and
 * queue: the batch whose turn the job kept failing in is given up on (only its head when it was
 * never frozen) and acknowledged, and a fresh job is left for what is behind it; nothing behind
 * it: no job. A conversation another holds gets a job due when that lock expires.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import type { Job } from 'bullmq';
import { lockRequest } from '../../src/queue/conversation-lock.js';
import { redisKeys } from '../../src/queue/keys.js';
import type { TurnJob } from '../../src/queue/turn-queue.js';
import { rescue } from '../../src/queue/turn-rescue.js';
import { startStepsRig, type StepsRig } from './steps-rig.js';

let rig: StepsRig;
beforeAll(async () => {
  rig = await startStepsRig();
});
afterAll(() => rig.close());

const failedJob = (conversationKey: string, messageId: string) =>
  ({ id: `failed-${messageId}`, data: { conversationKey, messageId }, attemptsMade: 8 }) as unknown as Job<TurnJob>;

const rescueJobs = async (conversationKey: string) =>
  (await rig.queue.getJobs(['waiting', 'delayed'])).filter((job) => job.id?.startsWith('rescue|') && job.data.conversationKey === conversationKey);

test('gives up on the failed head and leaves a fresh job for the message behind it', async () => {
  const key = rig.conversation();
  const head = await rig.send(key, 'the message whose turn kept failing');
  const behind = await rig.send(key, 'a message that rode on its job');
  await rescue(rig.context, failedJob(key, head.messageId), key, head.messageId, new Error('Connection is closed.'));

  expect(rig.givenUp.at(-1)).toMatchObject({ batch: { message: { messageId: head.messageId }, earlier: [] }, failure: { reason: 'unknown', attempts: 8 } });
  expect((await rig.inbox.batch(key, 1))?.entries[0].message.messageId).toBe(behind.messageId);
  const jobs = await rescueJobs(key);
  expect(jobs.map((job) => job.data)).toEqual([{ conversationKey: key, messageId: head.messageId }]);
  expect(await rig.redis.exists(redisKeys.lock(key))).toBe(0);
});

test('nothing behind the failed head: it is given up on and no job is left', async () => {
  const key = rig.conversation();
  const head = await rig.send(key, 'alone');
  await rescue(rig.context, failedJob(key, head.messageId), key, head.messageId, new Error('boom'));
  expect(rig.givenUp.at(-1)?.batch.message.messageId).toBe(head.messageId);
  expect(await rig.inbox.size(key)).toBe(0);
  expect(await rescueJobs(key)).toEqual([]);
});

test('a job that failed outside a turn counts against the head; a held conversation gets a job when its lock expires', async () => {
  const key = rig.conversation();
  const head = await rig.send(key, 'hello');
  await rescue(rig.context, failedJob(key, head.messageId), key, undefined, new Error('stalled'));
  // One unknown failure: not given up on yet, tried again by the fresh job.
  expect((await rig.inbox.batch(key, 1))?.retry).toMatchObject({ suspectAttempts: 1 });
  expect(rig.givenUp.some((given) => given.batch.message.messageId === head.messageId)).toBe(false);
  expect(await rescueJobs(key)).toHaveLength(1);

  const held = rig.conversation();
  const waiting = await rig.send(held, 'behind a live holder');
  const request = lockRequest(held, 3000);
  await rig.redis.set(request.key, request.token, 'PX', request.ttlMs, 'NX');
  await rescue(rig.context, failedJob(held, waiting.messageId), held, waiting.messageId, new Error('boom'));
  const [job] = await rescueJobs(held);
  expect(job?.opts.delay).toBeGreaterThan(2000);
  expect(await rig.inbox.size(held)).toBe(1);
});
