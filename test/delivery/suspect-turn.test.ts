/**
 * The suspect turn on real Redis: of the batches a worker died in, one runs again at a time. A
 * second claim waits while the holder lives, takes over at once when the holder's process is
 * gone, and a release frees it only for the holder that wrote it. A holder keeps it past its
 * TTL by renewing it.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import { createSuspectTurn } from '../../src/queue/suspect-turn.js';

let redis: Redis;
beforeAll(() => {
  redis = new Redis(process.env.TEST_REDIS_URL ?? '');
});
afterAll(() => redis.quit());

test('one holder at a time; a dead holder is replaced; only the holder releases', async () => {
  const dead = new Set<string>();
  const suspects = createSuspectTurn(redis, `{bull-${randomUUID().slice(0, 8)}}:turns`, async (mark) => dead.has(mark));
  expect(await suspects.claim('worker-a|1')).toBe(true);
  // Claiming again (the same drain after a restart) keeps it.
  expect(await suspects.claim('worker-a|1')).toBe(true);
  expect(await suspects.claim('worker-b|2')).toBe(false);

  // Worker A's process died holding it: the next suspect need not wait for the TTL.
  dead.add('worker-a|1');
  expect(await suspects.claim('worker-b|2')).toBe(true);
  // A's late release (it was only presumed dead) does not free B's claim.
  await suspects.release('worker-a|1');
  expect(await suspects.claim('worker-c|3')).toBe(false);

  await suspects.release('worker-b|2');
  expect(await suspects.claim('worker-c|3')).toBe(true);
});

test('each turns queue has its own', async () => {
  const never = async () => false;
  const first = createSuspectTurn(redis, `{bull-${randomUUID().slice(0, 8)}}:turns`, never);
  const second = createSuspectTurn(redis, `{bull-${randomUUID().slice(0, 8)}}:turns`, never);
  expect(await first.claim('worker-a|1')).toBe(true);
  expect(await second.claim('worker-b|2')).toBe(true);
});

test('a holder that renews its lease keeps it past the TTL; one that does not loses it', async () => {
  const never = async () => false;
  const suspects = createSuspectTurn(redis, `{bull-${randomUUID().slice(0, 8)}}:turns`, never, 400);
  expect(await suspects.claim('worker-a|1')).toBe(true);
  for (let tick = 0; tick < 4; tick += 1) {
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(await suspects.renew('worker-a|1')).toBe(true);
  }
  // 600 ms after the claim, past its TTL: still held.
  expect(await suspects.claim('worker-b|2')).toBe(false);
  // Only the holder renews it.
  expect(await suspects.renew('worker-b|2')).toBe(false);
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect(await suspects.renew('worker-a|1')).toBe(false);
  expect(await suspects.claim('worker-b|2')).toBe(true);
});
