/**
 * The reports page's HTML: the sign-in form, the report (a range and channel form, the figures,
 * SVG charts, every table with its CSV link) and error pages. No script at all; one style sheet,
 * inline and allowed by its hash (`REPORTS_CSP`), light or dark by `prefers-color-scheme`.
 */
import { createHash } from 'node:crypto';
import { barChart, escapeHtml, type Slot } from './charts.js';
import { waitingSection } from './page-handoffs.js';
import { satisfactionSection } from './page-satisfaction.js';
import type { Grouping } from './periods.js';
import { PRESETS, presetRange, type Preset } from './ranges.js';
import type { ReportSummary } from './summary.js';
import { reportTables, waitText as minutes, type Table } from './tables.js';

const STYLE = `
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1b1f24; --muted: #57606a; --line: #d0d7de; --card: #f6f8fa; --s1: #1f6feb; --s2: #bf8700; --s3: #2da44e; --focus: #8250df; }
@media (prefers-color-scheme: dark) { :root { --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --line: #30363d; --card: #161b22; --s1: #58a6ff; --s2: #d29922; --s3: #3fb950; --focus: #d2a8ff; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); font: 15px/1.5 system-ui, sans-serif; }
main { max-width: 1100px; margin: 0 auto; padding: 16px; }
h1 { font-size: 1.4rem; margin: 0 0 12px; }
h2 { font-size: 1.1rem; margin: 24px 0 8px; }
a { color: var(--s1); }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
form.range, form.signin { display: flex; flex-wrap: wrap; gap: 12px; align-items: end; margin-bottom: 16px; }
label { display: flex; flex-direction: column; font-size: 0.85rem; color: var(--muted); }
input, select, button { font: inherit; color: var(--fg); background: var(--card); border: 1px solid var(--line); border-radius: 6px; padding: 6px 8px; }
button { cursor: pointer; background: var(--s1); color: var(--bg); border-color: var(--s1); }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(180px, 1fr)); gap: 12px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
.card .value { font-size: 1.4rem; font-weight: 600; }
.card .what { color: var(--muted); font-size: 0.85rem; }
.chart { margin: 16px 0; }
.chart svg { width: 100%; height: auto; max-height: 280px; }
.grid { stroke: var(--line); }
.axis { fill: var(--muted); font-size: 11px; }
rect.s1, .key.s1::before { fill: var(--s1); background: var(--s1); }
rect.s2, .key.s2::before { fill: var(--s2); background: var(--s2); }
rect.s3, .key.s3::before { fill: var(--s3); background: var(--s3); }
rect.unsettled { fill-opacity: 0.4; stroke: var(--fg); stroke-width: 1; stroke-dasharray: 3 2; }
.key.unsettled::before { background: transparent; border: 1px dashed var(--fg); }
.key::before { content: ""; display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 10px; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; min-width: 50%; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: right; white-space: nowrap; }
th:first-child, td:first-child { text-align: left; }
.note, .error { color: var(--muted); }
.error { color: #cf222e; font-weight: 600; }
header { display: flex; justify-content: space-between; align-items: baseline; }
.chart.spread svg { max-width: 420px; }
ol.comments { padding-left: 1.2rem; }
ol.comments li { margin: 6px 0; }
.rating { font-weight: 600; }
.card .before { color: var(--muted); font-size: 0.8rem; margin-top: 4px; }
nav.presets { display: flex; flex-wrap: wrap; gap: 6px 14px; margin-bottom: 10px; }
nav.presets a[aria-current] { font-weight: 600; color: var(--fg); text-decoration: none; }
`;

/** The page's Content-Security-Policy: nothing but its own hashed style and forms to itself. */
export const REPORTS_CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`,
  'img-src data:',
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

function layout(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="color-scheme" content="light dark"><link rel="icon" href="data:,"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body><main>${body}</main></body></html>`;
}

/** What the page was asked for before signing in, carried through the form. */
type AskedRange = Partial<Record<'from' | 'to' | 'channel' | 'preset' | 'group', string>>;

const hidden = (query: AskedRange) =>
  (['from', 'to', 'channel', 'preset', 'group'] as const)
    .map((field) => (query[field] ? `<input type="hidden" name="${field}" value="${escapeHtml(query[field])}">` : ''))
    .join('');

export function renderSignIn(base: string, query: AskedRange, error?: string): string {
  return layout(
    'Sign in · Reports',
    `<h1>Reports</h1>${error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : ''}<form class="signin" method="post" action="${base}/sign-in">${hidden(query)}<input type="text" name="username" value="owner" autocomplete="username" hidden><label>Admin token<input type="password" name="token" autocomplete="current-password" required autofocus></label><button type="submit">Sign in</button></form><p class="note">The token is ADMIN_TOKEN from the service's configuration. Signing in sets a session cookie for this page only.</p>`,
  );
}

export function renderError(base: string, reason: string): string {
  return layout('Reports', `<h1>Reports</h1><p class="error" role="alert">${escapeHtml(reason)}</p><p><a href="${base}">Back to the last 30 days</a></p>`);
}

const percent = (value: number | null) => (value === null ? '–' : `${(100 * value).toFixed(1)}%`);

function card(value: string, what: string, before?: string): string {
  const previous = before === undefined ? '' : `<div class="before">previous period: ${escapeHtml(before)}</div>`;
  return `<div class="card"><div class="value">${escapeHtml(value)}</div><div class="what">${escapeHtml(what)}</div>${previous}</div>`;
}

/** Each card's value and label, for a period's totals (the current one's, or the previous one's to compare). */
function cardValues(totals: ReportSummary['totals'], csat: ReportSummary['csat']): [string, string][] {
  const { resolution } = totals;
  const cost = totals.model.costPerConversation;
  const { teammateFirstResponse: elapsed, teammateFirstResponseWithinHours: open } = totals;
  return [
    [totals.distinctConversations === null ? '–' : String(totals.distinctConversations), 'distinct conversations'],
    [String(totals.conversations), 'conversation-days (with a customer message, per day)'],
    [`${totals.messagesIn} / ${totals.messagesOut}`, 'messages in / out'],
    [percent(totals.resolvedWithoutPersonShare), 'resolved without a person (per day)'],
    [percent(totals.resolvedByAssistantRate), 'conversations resolved by the assistant'],
    [percent(totals.handoffRate), 'hand-off rate'],
    [minutes(elapsed.medianSeconds), `team's median first reply (p90 ${minutes(elapsed.p90Seconds)})`],
    [minutes(open.medianSeconds), `median first reply within team hours (p90 ${minutes(open.p90Seconds)})`],
    [`${totals.actions.run} / ${totals.actions.declined} / ${totals.actions.failed}`, 'actions run / declined / failed'],
    [cost === undefined ? '–' : cost.toFixed(4), 'model cost per conversation'],
    [String(totals.knowledgeMisses), 'questions your knowledge had no answer for'],
    csat
      ? [
          csat.score === null ? 'none yet' : `${csat.score.toFixed(2)} / 5`,
          `satisfaction (${csat.responses} of ${csat.asked} answered, ${percent(csat.responseRate)})`,
        ]
      : ['none yet', 'satisfaction answers'],
    [
      minutes(resolution.medianSeconds),
      `median hand-off resolution time (p90 ${minutes(resolution.p90Seconds)}; ${resolution.ended} of ${totals.handoffs} ended)`,
    ],
  ];
}

/** Links to the presets' ranges (the current channel kept); the one shown is marked. */
function presetLinks(base: string, summary: ReportSummary, today: string): string {
  const presets = Object.entries(PRESETS) as [Preset, string][];
  // The first preset naming the days shown (in November, the last 30 days are this month too).
  const shown = presets.find(([preset]) => {
    const range = presetRange(preset, today);
    return range.from === summary.from && range.to === summary.to;
  })?.[0];
  const links = presets.map(([preset, label]) => {
    const current = preset === shown ? ' aria-current="page"' : '';
    const query = new URLSearchParams({ preset, channel: summary.channel, ...grouped(summary) }).toString();
    return `<a href="${base}?${query}"${current}>${escapeHtml(label)}</a>`;
  });
  return `<nav class="presets" aria-label="Presets">${links.join('')}</nav>`;
}

function table(base: string, query: string, data: Table): string {
  const head = data.columns.map((column) => `<th scope="col">${escapeHtml(column)}</th>`).join('');
  const rows = data.rows.length
    ? data.rows
        .map(
          (row) =>
            `<tr>${row.map((cell, index) => (index === 0 ? `<th scope="row">${escapeHtml(String(cell))}</th>` : `<td>${escapeHtml(String(cell))}</td>`)).join('')}</tr>`,
        )
        .join('')
    : `<tr><td colspan="${data.columns.length}">Nothing in this range.</td></tr>`;
  return `<section aria-labelledby="t-${data.name}"><h2 id="t-${data.name}">${escapeHtml(data.title)}</h2><p><a href="${base}/csv/${data.name}.csv?${query}" download>Download ${escapeHtml(data.title.toLowerCase())} (CSV)</a></p><div class="scroll" tabindex="0" role="region" aria-label="${escapeHtml(data.title)}, table"><table><thead><tr>${head}</tr></thead><tbody>${rows}</tbody></table></div></section>`;
}

const GROUP_LABELS: Record<Grouping, string> = { day: 'Day', week: 'Week', month: 'Month' };
/** The grouping, the site and the role as a link's query parameters (none for the defaults: days, all sites, all roles). */
const grouped = (summary: ReportSummary): Record<string, string> => ({
  ...(summary.group === 'day' ? {} : { group: summary.group }),
  ...(summary.site === 'all' ? {} : { site: summary.site }),
  ...(summary.role === 'all' ? {} : { role: summary.role }),
});

/** The chart's periods: a day by its month and day, a week by its Monday's, a month `YYYY-MM`. */
function slotsOf(summary: ReportSummary): Slot[] {
  return summary.periods.map((period) => ({
    label: summary.group === 'month' ? period.day : period.day.slice(5),
    name: summary.group === 'week' ? `week of ${period.day}` : period.day,
    settled: period.settled,
  }));
}

/** A choice of the range form: `all` (named `everything`) and each of `names`. */
function choice(label: string, name: string, everything: string, names: readonly string[], chosen: string): string {
  const options = ['all', ...names]
    .map((one) => `<option value="${escapeHtml(one)}"${one === chosen ? ' selected' : ''}>${one === 'all' ? everything : escapeHtml(one)}</option>`)
    .join('');
  return `<label>${label}<select name="${name}">${options}</select></label>`;
}

function rangeForm(base: string, summary: ReportSummary, channels: readonly string[], views: { sites: readonly string[]; roles: readonly string[] }): string {
  const options = ['all', ...channels]
    .map(
      (channel) =>
        `<option value="${escapeHtml(channel)}"${channel === summary.channel ? ' selected' : ''}>${channel === 'all' ? 'All channels' : escapeHtml(channel)}</option>`,
    )
    .join('');
  const groups = (Object.entries(GROUP_LABELS) as [Grouping, string][])
    .map(([group, label]) => `<option value="${group}"${group === summary.group ? ' selected' : ''}>${label}</option>`)
    .join('');
  return `<form class="range" method="get" action="${base}" aria-label="Range"><label>From<input type="date" name="from" value="${summary.from}" required></label><label>To<input type="date" name="to" value="${summary.to}" required></label><label>Channel<select name="channel">${options}</select></label>${choice('Site', 'site', 'All sites', views.sites, summary.site)}${choice('Role', 'role', 'All roles', views.roles, summary.role)}<label>Group by<select name="group">${groups}</select></label><button type="submit">Show</button></form>`;
}

export function renderReport(
  base: string,
  summary: ReportSummary,
  channels: readonly string[],
  today: string,
  views: { sites: readonly string[]; roles: readonly string[] } = { sites: [], roles: [] },
  /** The time zone whose days the report counts (REPORTS_TIME_ZONE). */
  zone = 'UTC',
): string {
  const { totals } = summary;
  const query = new URLSearchParams({ from: summary.from, to: summary.to, channel: summary.channel, ...grouped(summary) }).toString();
  const days = slotsOf(summary);
  const periods = summary.periods;
  const tables = reportTables(summary);
  const now = cardValues(totals, summary.csat);
  const before = summary.previous ? cardValues(summary.previous.totals, summary.previous.csat) : undefined;
  const cards = now.map(([value, what], index) => card(value, what, before?.[index]?.[0])).join('');
  const charts = [
    barChart('c-conv', `Conversations per ${summary.group}`, days, [
      { label: 'conversations', className: 's1', values: periods.map((day) => day.conversations) },
    ]),
    barChart('c-msg', `Messages per ${summary.group}`, days, [
      { label: 'in', className: 's1', values: periods.map((day) => day.messagesIn) },
      { label: 'out', className: 's2', values: periods.map((day) => day.messagesOut) },
    ]),
    barChart('c-res', 'Resolved without a person, and with one', days, [
      { label: 'without a person', className: 's3', values: periods.map((day) => day.resolvedWithoutPerson) },
      { label: 'with a person or back next day', className: 's2', values: periods.map((day) => day.notResolved) },
    ]),
  ].join('');
  const body = `<header><h1>Reports</h1><form method="post" action="${base}/sign-out"><button type="submit">Sign out</button></form></header>${presetLinks(base, summary, today)}${rangeForm(base, summary, channels, views)}<p class="note">${summary.from} to ${summary.to} (${escapeHtml(zone)} days)${summary.previous ? `, compared with ${summary.previous.from} to ${summary.previous.to}` : ''} · ${summary.channel === 'all' ? 'all channels' : escapeHtml(summary.channel)}${summary.site === 'all' ? '' : ` · site ${escapeHtml(summary.site)} (model use and knowledge misses are not kept per site)`}${summary.role === 'all' ? '' : ` · role ${escapeHtml(summary.role)} (what it did: conversations, messages in, actions and knowledge misses are not kept per role)`} · <a href="${base}/summary?${query}">JSON</a></p><section class="cards" aria-label="Figures">${cards}</section>${waitingSection(summary.waitingNow)}${charts}${Object.values(
    tables,
  )
    .filter((one) => one.name !== 'satisfaction')
    .map((one) => table(base, query, one))
    .join('')}${satisfactionSection(base, query, summary.csat, table(base, query, tables.satisfaction))}`;
  return layout(`Reports ${summary.from} to ${summary.to}`, body);
}
