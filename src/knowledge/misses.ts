/**
 * Questions the knowledge could not answer, newest first, for the business to see what its help
 * center is missing: one capped Redis list, counted `knowledge_misses_total{role}`. A miss is
 * recorded with its turn's finish (the metering's step, run once per reply: a turn run again for
 * the same message, a retry or a restart, lists and counts nothing more): one LPUSH, and an LTRIM
 * back to the cap once the list is TRIM_SLACK past it. Outside the orchestrator's state.
 */
import { z } from 'zod';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { KEY_PREFIX, type RedisClient } from '../redis.js';

const MISSES_KEY = `${KEY_PREFIX}:knowledge:misses`;
const MAX_MISSES = 500;

/** Entries the list may grow past MAX_MISSES before it is trimmed back (one LTRIM per this many misses, not per miss). */
const TRIM_SLACK = 50;

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
    /** Lists and counts a miss (its turn's finish calls it once per reply). Resolves true when it was listed; a failure is logged and resolves false (never fails the turn). */
    async record(miss: Omit<KnowledgeMiss, 'at'>): Promise<boolean> {
      const entry = JSON.stringify({ at: new Date().toISOString(), ...miss, question: miss.question.slice(0, 500) });
      try {
        if ((await redis.lpush(MISSES_KEY, entry)) > MAX_MISSES + TRIM_SLACK) await redis.ltrim(MISSES_KEY, 0, MAX_MISSES - 1);
        dependencies.metrics.increment('knowledge_misses_total', { role: miss.role });
        return true;
      } catch (error) {
        dependencies.logger.warn('knowledge-miss-record-failed', { error });
        return false;
      }
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
