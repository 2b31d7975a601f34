/**
 * Retention by age for the stores the transcripts' purge (`src/store/retention.ts`) does not
 * reach, on the same schedule and TRANSCRIPT_RETENTION_DAYS: ratings and their comments,
 * suggestions drafted from hand-offs (the exchange they keep), unanswered questions, the
 * transcript outbox's dead letters; a confirmed action keeps its outcome for the books and loses
 * what named the person, as in an erasure.
 */
import type { Connection } from 'mongoose';
import { KEY_PREFIX, type RedisClient } from '../redis.js';
import { transcriptKeys } from '../store/transcript-keys.js';

const MISSES_KEY = `${KEY_PREFIX}:knowledge:misses`;
const ACTION_PERSONAL = { args: 1, summary: 1, proposedBy: 1, confirmedBy: 1, result: 1, error: 1, language: 1, title: 1 };

/** One pass: what was older than `cutoff`, removed (actions: anonymised); counts by store. */
export async function purgeByAge(connection: Connection, redis: RedisClient, database: string, cutoff: Date): Promise<Record<string, number>> {
  const ratings = await connection.collection('csat').deleteMany({ askedAt: { $lt: cutoff } });
  const suggestions = await connection.collection('knowledge_suggestions').deleteMany({ createdAt: { $lt: cutoff } });
  const actions = await connection
    .collection('actions')
    .updateMany({ updatedAt: { $lt: cutoff }, summary: { $exists: true } }, { $set: { conversationId: 'expired' }, $unset: ACTION_PERSONAL });
  let misses = 0;
  for (const entry of await redis.lrange(MISSES_KEY, 0, -1)) {
    const at = Date.parse((JSON.parse(entry) as { at?: string }).at ?? '');
    if (Number.isFinite(at) && at < cutoff.getTime()) misses += await redis.lrem(MISSES_KEY, 0, entry);
  }
  const deadLetters = Number(await redis.xtrim(transcriptKeys.deadLetters(database), 'MINID', cutoff.getTime()));
  return { ratings: ratings.deletedCount, suggestions: suggestions.deletedCount, actionsAnonymised: actions.modifiedCount, misses, deadLetters };
}
