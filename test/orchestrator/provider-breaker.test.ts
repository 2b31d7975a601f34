/**
 * The per-provider circuit breaker on real Redis, two processes' breakers sharing it: healthy
 * calls cost no Redis command, failures in a row open it for every process, scattered failures
 * between successes never do, and after the cooldown exactly one process probes — its success
 * closes it for all. A probe always settles: one aborted (or one whose attempt ended for a reason
 * not the provider's) gives up its claim, so the next call probes at once; one the provider
 * answered, even with a refusal of the request, closes it.
 */
import { randomUUID } from 'node:crypto';
import type { LanguageModelUsage } from 'ai';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { createProviderBreakers, type ProviderBreakers } from '../../src/model/provider-breaker.js';
import type { ModelEntry } from '../../src/model/provider.js';
import { withFailover } from '../../src/orchestrator/failover.js';

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

describe('a probe always settles', () => {
  const logger = createLogger({ level: 'error', sink: () => undefined });
  /** What a call answers with (failover reads none of it). */
  const usage = {} as LanguageModelUsage;
  const entry = (provider: string) => ({ provider, label: `${provider}:model`, model: {} as ModelEntry['model'], acceptsFiles: true });
  const call = (breakers: ProviderBreakers, provider: string, run: () => Promise<{ usage: typeof usage }>, signal = new AbortController().signal) =>
    withFailover(
      {
        chain: 'fast',
        entries: [entry(provider)],
        breakers,
        timeoutMs: 5_000,
        signal,
        purpose: 'reply',
        observer: undefined,
        logger,
        metrics: createMetrics(),
      },
      run,
    );
  /** A provider both workers saw fail three times in a row, its cooldown over: the next call probes it. */
  async function openedThenCooled(provider: string) {
    const { a, b } = fleet();
    for (let count = 0; count < 3; count += 1) await a.failed(provider);
    await b.failed(provider);
    clock += COOLDOWN_MS + 1;
    return { a, b };
  }

  test('a probe aborted with its turn gives up its claim: the next call probes at once', async () => {
    const { a, b } = await openedThenCooled('mistral');
    const turn = new AbortController();
    const aborted = call(
      a,
      'mistral',
      () => {
        turn.abort(new Error('the turn started over'));
        return Promise.reject(new Error('aborted'));
      },
      turn.signal,
    );
    await expect(aborted).rejects.toThrow('aborted');
    // The provider may be up: neither worker waits another cooldown to find out.
    clock += 1;
    expect(await b.admit('mistral')).toBe(true);
  });

  test('the same worker may probe again after its own aborted probe', async () => {
    const { a } = await openedThenCooled('cohere');
    const turn = new AbortController();
    turn.abort(new Error('gone'));
    await expect(call(a, 'cohere', () => Promise.reject(new Error('aborted')), turn.signal)).rejects.toThrow('aborted');
    clock += 1;
    await expect(call(a, 'cohere', () => Promise.resolve({ usage }))).resolves.toMatchObject({ entry: { provider: 'cohere' } });
  });

  test('a probe the provider answered with a refusal of the request (400) closes it: the provider is up', async () => {
    const { a, b } = await openedThenCooled('xai');
    const refusal = Object.assign(new Error('HTTP 400: bad request'), { statusCode: 400 });
    await expect(call(a, 'xai', () => Promise.reject(refusal))).rejects.toThrow('bad request');
    clock += 1;
    expect(await b.admit('xai')).toBe(true);
    expect(a.admit('xai')).toBe(true);
  });
});
