/**
 * The teammates' first reply after a hand-off, as the report shows it: a histogram over
 * RESPONSE_BUCKETS read into a count, a median and a p90 (interpolated within their bucket), for
 * the whole range and per team and per teammate (the roll-up's `frt_team:` / `frt_tm:` metrics,
 * elapsed, and `frth_team:` / `frth_tm:`, within the team's hours). Pure.
 */
import { RESPONSE_BUCKETS } from './rollup-events.js';

export interface FirstResponse {
  replies: number;
  medianSeconds: number | null;
  p90Seconds: number | null;
  histogram: { upToSeconds: number | null; replies: number }[];
}

/** One team's or teammate's first replies: how many, the median and p90 elapsed, and within the team's hours. */
export interface FirstReplyFigures {
  replies: number;
  medianSeconds: number | null;
  p90Seconds: number | null;
  withinHours: { medianSeconds: number | null; p90Seconds: number | null };
}

export const emptyHistogram = () => Array.from({ length: RESPONSE_BUCKETS.length + 1 }, () => 0);

export function firstResponse(histogram: readonly number[]): FirstResponse {
  return {
    replies: histogram.reduce((sum, n) => sum + n, 0),
    medianSeconds: quantile(histogram, 0.5),
    p90Seconds: quantile(histogram, 0.9),
    histogram: histogram.map((replies, bucket) => ({ upToSeconds: RESPONSE_BUCKETS[bucket] ?? null, replies })),
  };
}

/** The value at quantile `q` of a histogram over RESPONSE_BUCKETS, interpolated within its bucket. */
function quantile(histogram: readonly number[], q: number): number | null {
  const total = histogram.reduce((sum, n) => sum + n, 0);
  if (total === 0) return null;
  const rank = q * total;
  let seen = 0;
  for (const [bucket, n] of histogram.entries()) {
    if (n === 0 || seen + n < rank) {
      seen += n;
      continue;
    }
    const lower = bucket === 0 ? 0 : (RESPONSE_BUCKETS[bucket - 1] ?? 0);
    const upper = RESPONSE_BUCKETS[bucket] ?? lower;
    return Math.round(lower + ((upper - lower) * (rank - seen)) / n);
  }
  return RESPONSE_BUCKETS[RESPONSE_BUCKETS.length - 1] ?? null;
}

const PER_NAME = /^(frth?)_(team|tm):(.*):(\d+)$/;

/** Histograms per team and per teammate, elapsed and within hours, summed from roll-up metrics. */
export class FirstRepliesByName {
  private readonly histograms = { team: new Map<string, [number[], number[]]>(), tm: new Map<string, [number[], number[]]>() };

  /** Adds `n` if `metric` is a per-name first-reply metric; false otherwise. */
  add(metric: string, n: number): boolean {
    const match = PER_NAME.exec(metric);
    if (!match) return false;
    const [, kind = '', by = '', encoded = '', bucket = ''] = match;
    const map = this.histograms[by as 'team' | 'tm'];
    const name = decodeURIComponent(encoded);
    const pair = map.get(name) ?? [emptyHistogram(), emptyHistogram()];
    map.set(name, pair);
    const histogram = pair[kind === 'frt' ? 0 : 1];
    histogram[Number(bucket)] = (histogram[Number(bucket)] ?? 0) + n;
    return true;
  }

  figures(by: 'team' | 'tm'): Record<string, FirstReplyFigures> {
    const entries = [...this.histograms[by]].sort(([a], [b]) => a.localeCompare(b));
    return Object.fromEntries(
      entries.map(([name, [elapsed, open]]) => {
        const all = firstResponse(elapsed);
        const within = firstResponse(open);
        return [
          name,
          {
            replies: all.replies,
            medianSeconds: all.medianSeconds,
            p90Seconds: all.p90Seconds,
            withinHours: { medianSeconds: within.medianSeconds, p90Seconds: within.p90Seconds },
          },
        ];
      }),
    );
  }
}
