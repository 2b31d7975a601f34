/**
 * The report's ranges of days: the presets a page offers (today, the last 7 and 30 days, this
 * month, last month — UTC days, up to today) and the previous period a range is compared with
 * (as many days, ending the day before it starts). Pure.
 */
import { addDays } from './rollup-events.js';

export const PRESETS = {
  today: 'Today',
  'last-7-days': 'Last 7 days',
  'last-30-days': 'Last 30 days',
  'this-month': 'This month',
  'last-month': 'Last month',
} as const;
export type Preset = keyof typeof PRESETS;

/** The days a preset names, `today` being the last day there is. */
export function presetRange(preset: Preset, today: string): { from: string; to: string } {
  const monthStart = `${today.slice(0, 8)}01`;
  switch (preset) {
    case 'today':
      return { from: today, to: today };
    case 'last-7-days':
      return { from: addDays(today, -6), to: today };
    case 'last-30-days':
      return { from: addDays(today, -29), to: today };
    case 'this-month':
      return { from: monthStart, to: today };
    case 'last-month': {
      const to = addDays(monthStart, -1);
      return { from: `${to.slice(0, 8)}01`, to };
    }
  }
}

/** As many days as `from`..`to`, ending the day before `from`. */
export function previousRange(from: string, to: string): { from: string; to: string } {
  const days = Math.round((Date.parse(to) - Date.parse(from)) / 86_400_000) + 1;
  return { from: addDays(from, -days), to: addDays(from, -1) };
}
