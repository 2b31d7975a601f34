/**
 * Retention by age, per kind of data: each kind's period in days, TRANSCRIPT_RETENTION_DAYS unless
 * its own variable says otherwise (shorter, or longer where the law allows or requires it, e.g. a
 * confirmed action kept for the books).
 */
import { z } from 'zod';

const days = z.coerce.number({ error: 'expected a positive integer' }).int().positive().optional();

export const retentionFields = {
  MEDIA_RETENTION_DAYS: days,
  HANDOFF_RETENTION_DAYS: days,
  RATING_RETENTION_DAYS: days,
  ACTION_RETENTION_DAYS: days,
  SUGGESTION_RETENTION_DAYS: days,
  MISS_RETENTION_DAYS: days,
};

/** Days each kind is kept: transcripts (messages, deliveries, conversations, their recent history and event streams in Redis) and the rest. */
export interface RetentionDays {
  transcripts: number;
  media: number;
  handoffs: number;
  ratings: number;
  actions: number;
  suggestions: number;
  misses: number;
}

type RetentionEnv = z.infer<z.ZodObject<typeof retentionFields>> & { TRANSCRIPT_RETENTION_DAYS: number };

export function retentionConfig(env: RetentionEnv): RetentionDays {
  const transcripts = env.TRANSCRIPT_RETENTION_DAYS;
  return {
    transcripts,
    media: env.MEDIA_RETENTION_DAYS ?? transcripts,
    handoffs: env.HANDOFF_RETENTION_DAYS ?? transcripts,
    ratings: env.RATING_RETENTION_DAYS ?? transcripts,
    actions: env.ACTION_RETENTION_DAYS ?? transcripts,
    suggestions: env.SUGGESTION_RETENTION_DAYS ?? transcripts,
    misses: env.MISS_RETENTION_DAYS ?? transcripts,
  };
}
