/**
 * Questions the knowledge could not answer, newest first, for the business to see what its help
 * center is missing: one capped Redis list (one LPUSH + LTRIM in a pipeline, after retrieval,
 * outside the orchestrator's state), counted `knowledge_misses_total{role}`.
 */
import { z } from 'zod';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { KEY_PREFIX, type RedisClient } from '../redis.js';

const MISSES_KEY = `${KEY_PREFIX}:knowledge:misses`;
const MAX_MISSES = 500;

const MissSchema = z.object({
  at: z.string(),
  role: z.string(),
  question: z.string(),
  terms: z.string().optional(),
  site: z.string().optional(),
  channel: z.string().optional(),
});
export type KnowledgeMiss = z.infer<typeof MissSchema>;

export function createMissLog(redis: RedisClient, dependencies: { logger: Logger; metrics: Metrics }) {
  return {
    record(miss: Omit<KnowledgeMiss, 'at'>): void {
      dependencies.metrics.increment('knowledge_misses_total', { role: miss.role });
      const entry = JSON.stringify({ at: new Date().toISOString(), ...miss, question: miss.question.slice(0, 500) });
      redis
        .pipeline()
        .lpush(MISSES_KEY, entry)
        .ltrim(MISSES_KEY, 0, MAX_MISSES - 1)
        .exec()
        .catch((error: unknown) => dependencies.logger.warn('knowledge-miss-record-failed', { error }));
    },
    async list(limit: number): Promise<KnowledgeMiss[]> {
      const raw = await redis.lrange(MISSES_KEY, 0, limit - 1);
      return raw.flatMap((line) => {
        try {
          const parsed = MissSchema.safeParse(JSON.parse(line));
          return parsed.success ? [parsed.data] : [];
        } catch {
          return [];
        }
      });
    },
  };
}
export type MissLog = ReturnType<typeof createMissLog>;
