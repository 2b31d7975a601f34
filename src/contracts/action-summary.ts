/**
 * A confirmed action's summary as the service renders it (src/actions/summary.ts): a lead line
 * in the customer's language, then one detail line per argument and whom it is for, each
 * starting with `SUMMARY_DETAIL_MARK`. A teammate reads a change as its title and those details.
 */
export const SUMMARY_DETAIL_MARK = '• ';

/** The change in a teammate's words: its title, then the summary's detail lines (without the customer-facing lead). */
export function changeLines(action: { title: string; summary: string }): string[] {
  return [action.title, ...action.summary.split('\n').filter((line) => line.startsWith(SUMMARY_DETAIL_MARK))];
}
