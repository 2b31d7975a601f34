/**
 * Questions the knowledge could not answer, newest first, for the business to see what its help
 * center is missing: one capped Redis list, counted `knowledge_misses_total{role}`. A miss is
 * recorded once per customer message: one script sets the message's mark (SET NX, with a TTL)
 * and, only when it was not set yet, pushes it (trimming the list back to its cap once it is
 * TRIM_SLACK past it) — a turn run again for the same message (a retry, a restart) lists and
 * counts nothing more. Outside the orchestrator's state.
 */
import { z } from 'zod';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { KEY_PREFIX, luaScript, type RedisClient } from '../redis.js';

const MISSES_KEY = `${KEY_PREFIX}:knowledge:misses`;
const MAX_MISSES = 500;
/** How long a message's miss is remembered (a retried turn runs within minutes). */
const SEEN_TTL_SECONDS = 2 * 24 * 3600;
/** In the list's hash slot (its whole name as the hash tag): one script touches both on a Redis Cluster. */
const seenKey = (messageId: string) => `{${MISSES_KEY}}:seen:${messageId}`;

/** Entries the list may grow past MAX_MISSES before it is trimmed back (one LTRIM per this many misses, not per miss). */
const TRIM_SLACK = 50;

/**
 * KEYS: the list, the message's mark. ARGV: the entry, the mark's TTL, the list's last index, the
 * slack. 1: recorded; 0: seen before.
 */
const recordScript = luaScript(`
if not redis.call('SET', KEYS[2], '1', 'NX', 'EX', ARGV[2]) then return 0 end
if redis.call('LPUSH', KEYS[1], ARGV[1]) > tonumber(ARGV[3]) + 1 + tonumber(ARGV[4]) then redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[3])) end
return 1
`);

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
    /**
     * Lists and counts a miss unless this message's was already recorded (`messageId`: the
     * channel's id of the customer's latest message). Resolves true when it was recorded now;
     * a failure is logged and resolves false (never fails the turn).
     */
    async record(miss: Omit<KnowledgeMiss, 'at'>, messageId: string): Promise<boolean> {
      const entry = JSON.stringify({ at: new Date().toISOString(), ...miss, question: miss.question.slice(0, 500) });
      try {
        const recorded = Number(await recordScript(redis, [MISSES_KEY, seenKey(messageId)], [entry, SEEN_TTL_SECONDS, MAX_MISSES - 1, TRIM_SLACK])) === 1;
        if (recorded) dependencies.metrics.increment('knowledge_misses_total', { role: miss.role });
        return recorded;
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
