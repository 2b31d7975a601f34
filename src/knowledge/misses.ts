/**
 * Questions the knowledge could not answer, newest first, for the business to see what its help
 * center is missing: one capped Redis list, counted `knowledge_misses_total{role}` as they are
 * listed. A miss rides in its turn's usage entry (the one RPUSH its finish already makes: once per
 * reply, so a turn run again for the same message, a retry or a restart, lists nothing more) and
 * the usage fold lists all the misses it takes with one LPUSH (`listFolded`), and an LTRIM back to the
 * cap once the list is TRIM_SLACK past it: no Redis command of a miss's own. `list` folds what
 * turns recorded first (`pending`), so an owner looking right after a miss sees it. Without a
 * usage store (the terminal chat, a test's orchestrator) a miss is listed at once (`record`).
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

/** The list's line for a miss (its question cut to 500 characters). */
const missEntry = ({ at, ...miss }: KnowledgeMiss): string => JSON.stringify({ at, ...miss, question: miss.question.slice(0, 500) });

/** A miss as a turn's usage entry carried it (a JSON line), or undefined when it is not one. */
function missOf(line: string): KnowledgeMiss | undefined {
  try {
    const parsed = MissSchema.safeParse(JSON.parse(line));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export function createMissLog(
  redis: RedisClient,
  dependencies: {
    logger: Logger;
    metrics: Metrics;
    /** Folds the misses turns recorded in their usage entries into the list (the usage store's fold); `list` calls it first. */
    pending?: () => Promise<void>;
  },
) {
  /** Lists misses, the first given oldest, with one LPUSH; resolves true when listed, false on a failure (logged, never thrown). */
  const add = async (misses: readonly KnowledgeMiss[]): Promise<boolean> => {
    if (misses.length === 0) return true;
    try {
      if ((await redis.lpush(MISSES_KEY, ...misses.map(missEntry))) > MAX_MISSES + TRIM_SLACK) await redis.ltrim(MISSES_KEY, 0, MAX_MISSES - 1);
      for (const { role } of misses) dependencies.metrics.increment('knowledge_misses_total', { role });
      return true;
    } catch (error) {
      dependencies.logger.warn('knowledge-miss-record-failed', { misses: misses.length, error });
      return false;
    }
  };
  return {
    /** Lists and counts the misses a usage fold took from turns' entries (JSON lines; one not a miss is left out), with one LPUSH. */
    listFolded: (lines: readonly string[]): Promise<boolean> => add(lines.flatMap((line) => missOf(line) ?? [])),
    /** Lists and counts one miss at once (a finish with no usage store to carry it). Resolves true when it was listed; never fails the turn. */
    record: (miss: Omit<KnowledgeMiss, 'at'>): Promise<boolean> => add([{ at: new Date().toISOString(), ...miss }]),
    /** The newest `limit` misses, after folding those turns recorded since the last fold. */
    async list(limit: number): Promise<KnowledgeMiss[]> {
      await dependencies.pending?.().catch((error: unknown) => dependencies.logger.warn('knowledge-miss-fold-failed', { error }));
      return (await redis.lrange(MISSES_KEY, 0, limit - 1)).flatMap((line) => missOf(line) ?? []);
    },
  };
}
export type MissLog = ReturnType<typeof createMissLog>;
