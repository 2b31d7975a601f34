/**
 * Retention by age for the stores the transcripts' purge (`src/store/retention.ts`) does not
 * reach, on the same schedule, each kind by its own period (TRANSCRIPT_RETENTION_DAYS unless its
 * variable is set): ratings and their comments, suggestions drafted from hand-offs (the exchange
 * they keep), unanswered questions; a confirmed action keeps its outcome for the books and loses
 * what named the person, as in an erasure. With the transcripts' period: the transcript outbox's
 * dead letters and what Redis keeps of the conversations (`retention-redis.ts`).
 */
import type { Connection } from 'mongoose';
import { KEY_PREFIX, type RedisClient } from '../redis.js';
import type { CutoffOf } from '../store/retention.js';
import { transcriptKeys } from '../store/transcript-keys.js';
import { purgeRedisByAge } from './retention-redis.js';

const MISSES_KEY = `${KEY_PREFIX}:knowledge:misses`;
const ACTION_PERSONAL = { args: 1, summary: 1, proposedBy: 1, confirmedBy: 1, result: 1, error: 1, language: 1, title: 1 };

interface Stores {
  connection: Connection;
  redis: RedisClient;
  /** The MongoDB database's name (the outbox's streams are named by it). */
  database: string;
  queuePrefix: string;
}

/** One pass: what was older than its kind's cutoff, removed (actions: anonymised); counts by store. */
export async function purgeByAge({ connection, redis, database, queuePrefix }: Stores, cutoffOf: CutoffOf): Promise<Record<string, number>> {
  const ratings = await connection.collection('csat').deleteMany({ askedAt: { $lt: cutoffOf('ratings') } });
  const suggestions = await connection.collection('knowledge_suggestions').deleteMany({ createdAt: { $lt: cutoffOf('suggestions') } });
  const actions = await connection
    .collection('actions')
    .updateMany({ updatedAt: { $lt: cutoffOf('actions') }, summary: { $exists: true } }, { $set: { conversationId: 'expired' }, $unset: ACTION_PERSONAL });
  let misses = 0;
  const missCutoff = cutoffOf('misses').getTime();
  for (const entry of await redis.lrange(MISSES_KEY, 0, -1)) {
    const at = Date.parse((JSON.parse(entry) as { at?: string }).at ?? '');
    if (Number.isFinite(at) && at < missCutoff) misses += await redis.lrem(MISSES_KEY, 0, entry);
  }
  const transcripts = cutoffOf('transcripts');
  const deadLetters = Number(await redis.xtrim(transcriptKeys.deadLetters(database), 'MINID', transcripts.getTime()));
  const hot = await purgeRedisByAge(connection, redis, queuePrefix, transcripts);
  return { ratings: ratings.deletedCount, suggestions: suggestions.deletedCount, actionsAnonymised: actions.modifiedCount, misses, deadLetters, ...hot };
}
