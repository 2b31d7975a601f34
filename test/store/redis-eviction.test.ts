/**
 * Redis holds durable state (inboxes, the send ledger, the transcript outbox), so a Redis that
 * may evict keys loses it silently once it reaches `maxmemory`. The service says so plainly at
 * start-up: against a real Redis started with `--maxmemory-policy allkeys-lru` it logs a
 * `redis-eviction-on` warning naming the policy (and starts anyway, as with AOF off); against
 * the default `noeviction` it is quiet.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import { createLogger } from '../../src/logger.js';
import { checkRedisEviction } from '../../src/store/redis-persistence.js';
import { allowConsole } from '../support/console-guard.js';
import { startHarness, type LogLine } from '../support/harness.js';
import { startRedis, type RedisHandle } from '../support/services.js';

let evicting: RedisHandle;
beforeAll(async () => {
  evicting = await startRedis(['--maxmemory-policy', 'allkeys-lru', '--maxmemory', '64mb']);
});
afterAll(() => evicting.stop());

const capture = () => {
  const lines: LogLine[] = [];
  return { lines, logger: createLogger({ level: 'debug', sink: (line) => lines.push(JSON.parse(line) as LogLine) }) };
};

describe('the Redis eviction check', () => {
  test('warns about a Redis that evicts keys, naming its policy; is quiet about noeviction', async () => {
    const lru = capture();
    const client = new Redis(evicting.url);
    try {
      expect(await checkRedisEviction(client, lru.logger)).toBe('allkeys-lru');
    } finally {
      client.disconnect();
    }
    expect(lru.lines).toContainEqual(
      expect.objectContaining({ level: 'warn', event: 'redis-eviction-on', maxmemoryPolicy: 'allkeys-lru', maxmemory: String(64 * 1024 * 1024) }),
    );
    const quiet = capture();
    const shared = new Redis(process.env.TEST_REDIS_URL ?? '');
    try {
      expect(await checkRedisEviction(shared, quiet.logger)).toBe('noeviction');
    } finally {
      shared.disconnect();
    }
    expect(quiet.lines.filter((line) => line.level === 'warn')).toEqual([]);
  });

  // The service on its own Redis (not on `npm run test:cluster`'s cluster, whose primaries don't evict).
  (process.env.TEST_REDIS_CLUSTER_NODES ? test.skip : test)('is run at start-up: the service warns, and still starts (ready)', async () => {
    // BullMQ prints its own eviction warning for each of its connections (not the service's log).
    allowConsole('warn', /^IMPORTANT! Eviction policy is allkeys-lru/);
    const harness = await startHarness({ env: { REDIS_URL: evicting.url }, script: ({ userText }) => ({ text: `Answer to: ${userText}` }) });
    try {
      expect(harness.logs).toContainEqual(expect.objectContaining({ level: 'warn', event: 'redis-eviction-on', maxmemoryPolicy: 'allkeys-lru' }));
      const ready = await harness.http.get('/readyz');
      expect(ready.status).toBe(200);
    } finally {
      await harness.close();
    }
  });
});
