/**
 * The report's tables, each shown on the page and downloadable as CSV
 * (`/admin/reports/csv/<name>.csv`): the same rows both ways. A CSV cell that a spreadsheet
 * would read as a formula (`=`, `+`, `-`, `@`, tab, CR first) is prefixed with `'`.
 */
import type { CsatAnswer, RatingGroup } from './satisfaction.js';
import type { FirstReplyFigures } from './first-reply.js';
import type { ReportSummary } from './summary.js';

export interface Table {
  name: string;
  title: string;
  columns: string[];
  rows: (string | number)[][];
}

export const TABLE_NAMES = ['daily', 'handoffs', 'first-response', 'first-reply-by', 'models', 'guidance', 'satisfaction'] as const;
export type TableName = (typeof TABLE_NAMES)[number];

const money = (value: number | undefined) => (value === undefined ? '' : value.toFixed(4));

/** A wait as the cards show it: seconds, minutes or hours; none: `–`. */
export const waitText = (seconds: number | null) =>
  seconds === null ? '–' : seconds < 90 ? `${seconds} s` : seconds < 5400 ? `${Math.round(seconds / 60)} min` : `${(seconds / 3600).toFixed(1)} h`;

const PERIOD_COLUMN = { day: 'day', week: 'week (from Monday)', month: 'month' } as const;
const PERIOD_TITLE = { day: 'Per day', week: 'Per week', month: 'Per month' } as const;

const byRow = (by: string, name: string, figures: FirstReplyFigures) => [
  by,
  name,
  figures.replies,
  waitText(figures.medianSeconds),
  waitText(figures.p90Seconds),
  waitText(figures.withinHours.medianSeconds),
  waitText(figures.withinHours.p90Seconds),
];

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
      title: PERIOD_TITLE[summary.group],
      columns: [
        PERIOD_COLUMN[summary.group],
        'conversations',
        'distinct conversations',
        'messages in',
        'messages out',
        'hand-offs',
        'resolved without a person',
        'resolved by the assistant',
        'settled',
        'actions run',
        'actions declined',
        'actions failed',
        'knowledge misses',
        'model calls',
        'model cost',
        'of which rating messages',
      ],
      rows: summary.periods.map((day) => [
        day.day,
        day.conversations,
        day.distinctConversations ?? '',
        day.messagesIn,
        day.messagesOut,
        day.handoffs,
        day.resolvedWithoutPerson,
        day.resolvedByAssistant ?? '',
        day.settled ? 'yes' : 'not yet',
        day.actionsRun,
        day.actionsDeclined,
        day.actionsFailed,
        day.knowledgeMisses,
        day.modelCalls,
        money(day.cost),
        day.ratingMessages,
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
      columns: ['within', 'replies', 'replies, counting only team hours'],
      rows: totals.teammateFirstResponse.histogram.map((bucket, index, all) => [
        bucket.upToSeconds === null ? `over ${duration(all[index - 1]?.upToSeconds ?? null)}` : duration(bucket.upToSeconds),
        bucket.replies,
        totals.teammateFirstResponseWithinHours.histogram[index]?.replies ?? 0,
      ]),
    },
    'first-reply-by': {
      name: 'first-reply-by',
      title: 'First reply by team and by teammate',
      columns: ['by', 'name', 'replies', 'median', 'p90', 'median within team hours', 'p90 within team hours'],
      rows: [
        ...Object.entries(totals.firstReplyByTeam).map(([team, figures]) => byRow('team', team, figures)),
        ...Object.entries(totals.firstReplyByTeammate).map(([teammate, figures]) => byRow('teammate', teammate, figures)),
      ],
    },
    models: {
      name: 'models',
      title: 'Model use',
      columns: ['model', 'input tokens', 'output tokens'],
      rows: Object.entries(totals.model.byModel).map(([model, tokens]) => [model, tokens.inputTokens, tokens.outputTokens]),
    },
    guidance: {
      name: 'guidance',
      title: 'Guidance at work',
      columns: ['guidance entry', 'replies quoting it', 'replies it applied to'],
      rows: Object.entries(totals.guidance)
        .sort(([a, one], [b, other]) => other.quoted - one.quoted || other.applied - one.applied || a.localeCompare(b))
        .map(([entry, counts]) => [entry, counts.quoted, counts.applied]),
    },
    satisfaction: satisfactionTable(summary),
  };
}

const mean = (score: number | null) => (score === null ? '' : score.toFixed(2));
const groupRow = (by: string, name: string, group: RatingGroup) => [
  by,
  name,
  group.asked,
  group.responses,
  share(group.responses, group.asked),
  mean(group.score),
];

/** The satisfaction answers split every way the page shows them: overall, each rating, who answered before, team, site. */
function satisfactionTable(summary: ReportSummary): Table {
  const csat = summary.csat;
  const rows: (string | number)[][] = [];
  if (csat) {
    rows.push(groupRow('all', 'all', { asked: csat.asked, responses: csat.responses, score: csat.score }));
    for (const rating of ['5', '4', '3', '2', '1'] as const)
      rows.push(['rating', rating, '', csat.distribution[rating], share(csat.distribution[rating], csat.responses), '']);
    rows.push(groupRow('answered by', 'the assistant alone', csat.byPerson.assistantAlone));
    rows.push(groupRow('answered by', 'a teammate', csat.byPerson.afterTeammate));
    for (const [team, group] of Object.entries(csat.byTeam)) rows.push(groupRow('team', team, group));
    for (const [site, group] of Object.entries(csat.bySite)) rows.push(groupRow('site', site, group));
  }
  return {
    name: 'satisfaction',
    title: 'Satisfaction by rating, who answered, team and site',
    columns: ['by', 'name', 'asked', 'answers', 'share', 'mean rating'],
    rows,
  };
}

/** Every answered satisfaction question of the range (`/csv/answers.csv`; not on the page). */
export function answersTable(answers: readonly CsatAnswer[]): Table {
  return {
    name: 'answers',
    title: 'Satisfaction answers',
    columns: ['asked at', 'answered at', 'channel', 'site', 'conversation', 'answered by', 'team', 'rating', 'comment'],
    rows: answers.map((answer) => [
      answer.askedAt,
      answer.answeredAt,
      answer.channel,
      answer.site,
      answer.conversation,
      answer.afterTeammate ? 'a teammate' : 'the assistant alone',
      answer.team,
      answer.rating,
      answer.comment,
    ]),
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
