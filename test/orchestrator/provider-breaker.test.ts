/**
 * The per-provider circuit breaker on real Redis, two processes' breakers sharing it: healthy
 * calls cost no Redis command, failures in a row open it for every process, scattered failures
 * between successes never do, and after the cooldown exactly one process probes — its success
 * closes it for all.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import { createProviderBreakers } from '../../src/model/provider-breaker.js';

const COOLDOWN_MS = 10_000;
let redis: Redis;
let clock = 1_000_000;
beforeAll(() => {
  redis = new Redis(process.env.TEST_REDIS_URL!);
});
afterAll(() => redis.quit());

/** Two workers' breakers over one Redis, namespaced to the test, on a clock the test moves. */
function fleet() {
  const scope = randomUUID();
  const make = () => createProviderBreakers({ redis, failures: 3, cooldownMs: COOLDOWN_MS, scope, now: () => clock });
  return { a: make(), b: make(), keys: () => redis.keys(`asst:{model-breaker:${scope}:*`) };
}

test('a healthy provider is admitted from memory and a success writes nothing', async () => {
  const { a, keys } = fleet();
  expect(a.admit('anthropic')).toBe(true);
  await a.succeeded('anthropic');
  expect(await keys()).toEqual([]);
});

test('failures in a row open it for every process; after the cooldown one probe, whose success closes it for all', async () => {
  const { a, b } = fleet();
  await a.failed('anthropic');
  await a.failed('anthropic');
  await b.failed('anthropic');
  // B reported the third failure: it knows the breaker is open.
  expect(b.admit('anthropic')).toBe(false);
  // A learns it with its next failure (a healthy path reads nothing).
  await a.failed('anthropic');
  expect(a.admit('anthropic')).toBe(false);
  expect(b.admit('openai')).toBe(true);

  clock += COOLDOWN_MS + 1;
  const [first, second] = [await a.admit('anthropic'), await b.admit('anthropic')];
  expect([first, second]).toEqual([true, false]);
  await a.succeeded('anthropic');
  clock += 3_000;
  expect(await b.admit('anthropic')).toBe(true);
  expect(a.admit('anthropic')).toBe(true);
});

test('a failed probe opens it again at once', async () => {
  const { a } = fleet();
  for (let count = 0; count < 3; count += 1) await a.failed('google');
  clock += COOLDOWN_MS + 1;
  expect(await a.admit('google')).toBe(true);
  await a.failed('google');
  expect(a.admit('google')).toBe(false);
});

test('failures scattered between successes never open it', async () => {
  const { a, b } = fleet();
  for (let round = 0; round < 4; round += 1) {
    await a.succeeded('groq');
    await a.failed('groq');
    await b.succeeded('groq');
    await b.failed('groq');
  }
  expect(await a.admit('groq')).toBe(true);
  expect(await b.admit('groq')).toBe(true);
});
