/**
 * Resolution time: for the hand-offs opened in a report's range (UTC days, one channel or all),
 * the time from a hand-off opening to its end — handed back or closed — as a median and p90
 * (nearest rank over the ended ones), with how many were opened and how many have not ended yet.
 * Read from MongoDB when a report is asked for (never on a turn's path): one query on the
 * hand-offs' `createdAt` (indexed) for the range, projecting three fields, at most MAX_HANDOFFS.
 */
import type { Connection } from 'mongoose';
import { handoffModels } from '../handoff/handoff-records.js';
import { addDays } from './rollup-events.js';

const MAX_HANDOFFS = 20_000;

export interface ResolutionFigures {
  /** Hand-offs opened in the range. */
  opened: number;
  /** Of those, ended (handed back or closed). */
  ended: number;
  medianSeconds: number | null;
  p90Seconds: number | null;
  /** More than MAX_HANDOFFS were opened: the figures are the first ones'. */
  capped: boolean;
}

export interface ResolutionSource {
  read(query: { from: string; to: string; channel: string }): Promise<ResolutionFigures>;
}

/** The nearest-rank quantile of sorted values. */
const rank = (sorted: readonly number[], q: number) => (sorted.length === 0 ? null : (sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] ?? null));

export function createResolutionTimes(connection: Connection): ResolutionSource {
  const { handoffs } = handoffModels(connection);
  return {
    async read({ from, to, channel }) {
      const opened = await handoffs
        .find(
          {
            createdAt: { $gte: new Date(`${from}T00:00:00.000Z`), $lt: new Date(`${addDays(to, 1)}T00:00:00.000Z`) },
            ...(channel === 'all' ? {} : { channel }),
          },
          { createdAt: 1, endedAt: 1 },
        )
        .limit(MAX_HANDOFFS + 1)
        .lean()
        .exec();
      const counted = opened.slice(0, MAX_HANDOFFS);
      const seconds = counted
        .flatMap((one) => (one.endedAt instanceof Date ? [Math.max(0, Math.round((one.endedAt.getTime() - one.createdAt.getTime()) / 1000))] : []))
        .sort((a, b) => a - b);
      return {
        opened: counted.length,
        ended: seconds.length,
        medianSeconds: rank(seconds, 0.5),
        p90Seconds: rank(seconds, 0.9),
        capped: opened.length > MAX_HANDOFFS,
      };
    },
  };
}
