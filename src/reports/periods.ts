/**
 * The report's grouping of days into periods (`group=day|week|month`): weeks start on Monday,
 * months on the 1st; a period at either end of the range holds only the range's days (its
 * `from` and `to` say which). A period's counts are its days' sums, it is settled when all its
 * days are, and it has a cost only when every day of it has one. Pure.
 */
import { addDays } from './rollup-events.js';

export const GROUPINGS = ['day', 'week', 'month'] as const;
export type Grouping = (typeof GROUPINGS)[number];

/** The period a day falls in: the day itself, its week's Monday, or its month (`YYYY-MM`). */
function periodOf(day: string, group: Grouping): string {
  if (group === 'day') return day;
  if (group === 'month') return day.slice(0, 7);
  const weekday = (new Date(`${day}T00:00:00Z`).getUTCDay() + 6) % 7;
  return addDays(day, -weekday);
}

type Row = { day: string; settled: boolean; cost?: number };

/** The rows summed per period; `day` is the period (as `periodOf` names it), `from`..`to` its days in the range. */
export function groupRows<T extends Row>(rows: readonly T[], group: Grouping): (T & { from: string; to: string })[] {
  const periods = new Map<string, T[]>();
  for (const row of rows) {
    const period = periodOf(row.day, group);
    periods.set(period, [...(periods.get(period) ?? []), row]);
  }
  return [...periods].map(([period, list]) => {
    const sum: Record<string, unknown> = { ...list[0] };
    for (const [field, value] of Object.entries(sum)) {
      if (typeof value === 'number') sum[field] = list.reduce((total, row) => total + ((row as Record<string, unknown>)[field] as number), 0);
    }
    if (list.some((row) => row.cost === undefined)) delete sum.cost;
    return { ...(sum as T), day: period, settled: list.every((row) => row.settled), from: list[0]?.day ?? period, to: list[list.length - 1]?.day ?? period };
  });
}
