/**
 * The report's tables, each shown on the page and downloadable as CSV
 * (`/admin/reports/csv/<name>.csv`): the same rows both ways. A CSV cell that a spreadsheet
 * would read as a formula (`=`, `+`, `-`, `@`, tab, CR first) is prefixed with `'`.
 */
import type { ReportSummary } from './summary.js';

export interface Table {
  name: string;
  title: string;
  columns: string[];
  rows: (string | number)[][];
}

export const TABLE_NAMES = ['daily', 'handoffs', 'first-response', 'models'] as const;
export type TableName = (typeof TABLE_NAMES)[number];

const money = (value: number | undefined) => (value === undefined ? '' : value.toFixed(4));

const duration = (seconds: number | null): string => {
  if (seconds === null) return 'more';
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
};

export function reportTables(summary: ReportSummary): Record<TableName, Table> {
  const { totals } = summary;
  return {
    daily: {
      name: 'daily',
      title: 'Per day',
      columns: [
        'day',
        'conversations',
        'messages in',
        'messages out',
        'hand-offs',
        'resolved without a person',
        'settled',
        'actions run',
        'actions declined',
        'actions failed',
        'knowledge misses',
        'model calls',
        'model cost',
      ],
      rows: summary.days.map((day) => [
        day.day,
        day.conversations,
        day.messagesIn,
        day.messagesOut,
        day.handoffs,
        day.resolvedWithoutPerson,
        day.settled ? 'yes' : 'not yet',
        day.actionsRun,
        day.actionsDeclined,
        day.actionsFailed,
        day.knowledgeMisses,
        day.modelCalls,
        money(day.cost),
      ]),
    },
    handoffs: {
      name: 'handoffs',
      title: 'Hand-offs by team and role',
      columns: ['by', 'name', 'hand-offs', 'share of conversations'],
      rows: [
        ...Object.entries(totals.handoffsByTeam).map(([team, n]) => ['team', team, n, share(n, totals.conversations)]),
        ...Object.entries(totals.handoffsByRole).map(([role, n]) => ['role', role, n, share(n, totals.conversations)]),
      ],
    },
    'first-response': {
      name: 'first-response',
      title: "Teammates' first reply after a hand-off",
      columns: ['within', 'replies'],
      rows: totals.teammateFirstResponse.histogram.map((bucket, index, all) => [
        bucket.upToSeconds === null ? `over ${duration(all[index - 1]?.upToSeconds ?? null)}` : duration(bucket.upToSeconds),
        bucket.replies,
      ]),
    },
    models: {
      name: 'models',
      title: 'Model use',
      columns: ['model', 'input tokens', 'output tokens'],
      rows: Object.entries(totals.model.byModel).map(([model, tokens]) => [model, tokens.inputTokens, tokens.outputTokens]),
    },
  };
}

function share(part: number, whole: number): string {
  return whole > 0 ? `${((100 * part) / whole).toFixed(1)}%` : '';
}

function csvCell(value: string | number): string {
  let text = String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function toCsv(table: Table): string {
  return [table.columns, ...table.rows].map((row) => row.map(csvCell).join(',')).join('\r\n') + '\r\n';
}
