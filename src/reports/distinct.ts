/**
 * Distinct conversations in a report: over the whole range, per period of the grouping and over
 * the previous period, from the roll-up's HyperLogLogs per day and channel (`RollupStore.distinct`:
 * one pipeline of PFCOUNTs), and of those, the ones the assistant resolved — no hand-off opened and
 * no teammate's message in the same days. A range reaching further back than Redis keeps them
 * (DISTINCT_KEEP_DAYS) has none (null). Pure but for the one read.
 */
import { addDays } from './rollup-events.js';
import { DISTINCT_KEEP_DAYS, type RollupStore } from './rollup-store.js';

/** The distinct figures of a range or period; null: the range reaches further back than they are kept. */
export interface DistinctFigures {
  /** Distinct conversations with at least one customer message in the days. */
  distinctConversations: number | null;
  /** Of those, the ones with no hand-off opened and no teammate's message in the same days. */
  resolvedByAssistant: number | null;
}

export const NO_DISTINCT: DistinctFigures = { distinctConversations: null, resolvedByAssistant: null };

/** resolvedByAssistant ÷ distinctConversations (null without conversations, or without the figures). */
export const resolvedByAssistantRate = (figures: DistinctFigures) =>
  figures.distinctConversations && figures.resolvedByAssistant !== null ? figures.resolvedByAssistant / figures.distinctConversations : null;

function daysOf(from: string, to: string): string[] {
  const days: string[] = [];
  for (let day = from; day <= to; day = addDays(day, 1)) days.push(day);
  return days;
}

/** The distinct figures of each `from`..`to` (over `channels`): one read for them all. */
export async function readDistinct(
  store: Pick<RollupStore, 'distinct'>,
  ranges: readonly { from: string; to: string }[],
  channels: readonly string[],
  today: string,
): Promise<DistinctFigures[]> {
  const oldestKept = addDays(today, -DISTINCT_KEEP_DAYS);
  const kept = ranges.map(({ from }) => from > oldestKept);
  const counted = await store.distinct(ranges.filter((_, index) => kept[index]).map(({ from, to }) => ({ days: daysOf(from, to), channels })));
  let next = 0;
  return ranges.map((_, index) => {
    if (!kept[index]) return NO_DISTINCT;
    const found = counted[next++];
    return found ? { distinctConversations: found.conversations, resolvedByAssistant: found.withoutPerson } : NO_DISTINCT;
  });
}
