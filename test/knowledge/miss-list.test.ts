/**
 * The list of questions the knowledge missed stays bounded (its 500 newest, trimmed once it is 50
 * past that, not on every miss) and reads newest first, on a Redis database of its own.
 */
import { Redis } from 'ioredis';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { createMissLog } from '../../src/knowledge/misses.js';
import { ownKnowledgeRedisUrl } from '../support/knowledge-rig.js';

describe('the knowledge-miss list', () => {
  let redis: Redis;
  beforeAll(async () => {
    redis = new Redis(await ownKnowledgeRedisUrl());
    await redis.del('asst:knowledge:misses');
  });
  afterAll(() => redis.disconnect());

  test('holds at most 550 questions, the newest first, and lists at most what is asked', async () => {
    const misses = createMissLog(redis, { logger: createLogger({ level: 'error', sink: () => undefined }), metrics: createMetrics() });
    for (let index = 0; index < 560; index += 1) {
      expect(await misses.record({ role: 'support', question: `question ${index}`, terms: '' })).toBe(true);
    }
    const length = await redis.llen('asst:knowledge:misses');
    expect(length).toBeGreaterThanOrEqual(500);
    expect(length).toBeLessThanOrEqual(550);
    const listed = await misses.list(500);
    expect(listed).toHaveLength(500);
    expect(listed[0]?.question).toBe('question 559');
    expect(listed.at(-1)?.question).toBe('question 60');
  });
});
