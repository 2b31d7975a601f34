/**
 * Distinct conversations from the roll-up's HyperLogLogs (`rollup-script.ts` adds to them): for
 * each group of days and channels (or a site's or role's views), one PFCOUNT of the day keys of
 * conversations with a customer message (PFCOUNT merges them), one of those with a person, one of
 * both together; all in one pipeline. Same hash tag for every key, so a cluster takes each.
 */
import type { RedisClient } from '../redis.js';
import { DISTINCT_CONVERSATIONS, DISTINCT_WITH_PERSON } from './rollup-script.js';

export interface DistinctGroup {
  days: readonly string[];
  channels: readonly string[];
}

/** Per group: its distinct conversations, and of those, the ones with no person in the same days. */
export async function countDistinct(
  redis: RedisClient,
  dayKey: (set: string, day: string, channel: string) => string,
  groups: readonly DistinctGroup[],
): Promise<{ conversations: number; withoutPerson: number }[]> {
  const pipeline = redis.pipeline();
  const keysOf = (set: string, days: readonly string[], channels: readonly string[]) =>
    days.flatMap((day) => channels.map((channel) => dayKey(set, day, channel)));
  const asked = groups.filter(({ days, channels }) => days.length > 0 && channels.length > 0);
  for (const { days, channels } of asked) {
    const conversations = keysOf(DISTINCT_CONVERSATIONS, days, channels);
    const person = keysOf(DISTINCT_WITH_PERSON, days, channels);
    pipeline.pfcount(...conversations);
    pipeline.pfcount(...person);
    pipeline.pfcount(...conversations, ...person);
  }
  const results =
    asked.length === 0
      ? []
      : ((await pipeline.exec()) ?? []).map(([error, value]) => {
          if (error) throw error;
          return Number(value);
        });
  // Without a person: those with a customer message or a person, less those with a person (|A ∪ P| − |P| = |A \ P|).
  let next = 0;
  return groups.map(({ days, channels }) => {
    if (days.length === 0 || channels.length === 0) return { conversations: 0, withoutPerson: 0 };
    const [conversations = 0, person = 0, either = 0] = results.slice(next, next + 3);
    next += 3;
    return { conversations, withoutPerson: Math.min(conversations, Math.max(0, either - person)) };
  });
}
