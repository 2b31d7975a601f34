/**
 * The report's figures for a date range and channel, from the roll-up documents alone: per day
 * (conversations, messages, hand-offs, resolved without a person, actions, model use) and over
 * the range (shares, the teammates' median and p90 first response from the histogram, cost per
 * conversation), and the previous period's totals beside them. The query is checked here: dates
 * `YYYY-MM-DD` or a preset (`ranges.ts`), `from` ≤ `to`, at most MAX_RANGE_DAYS, a known channel.
 * Pure but for `readSummary`.
 */
import { z } from 'zod';
import { NO_DISTINCT, readDistinct, resolvedByAssistantRate, type DistinctFigures } from './distinct.js';
import { emptyHistogram, FirstRepliesByName, firstResponse, type FirstReplyFigures, type FirstResponse } from './first-reply.js';
import { GROUPINGS, groupRows, type Grouping } from './periods.js';
import { addDays, roleView, rollupId, siteView } from './rollup-events.js';
import type { RollupDocument, RollupStore } from './rollup-store.js';
import { PRESETS, presetRange, previousRange, type Preset } from './ranges.js';
import type { CsatFigures } from './satisfaction.js';
import type { WaitingNow } from './waiting-handoffs.js';

const MAX_RANGE_DAYS = 400;
const DEFAULT_RANGE_DAYS = 30;

/** Model id → price per million input and output tokens (MODEL_PRICES). */
export type ModelPrices = Record<string, { inputPerMTok: number; outputPerMTok: number }>;

export interface ReportQuery {
  from: string;
  to: string;
  /** A channel id, or `all`. */
  channel: string;
  /** A widget site's key, or `all`: a site's figures are its conversations' (model use and knowledge misses are not kept per site). */
  site: string;
  /** A role's id, or `all`: a role's figures are what it did (its replies and the conversations it answered, its hand-offs, its model use). */
  role: string;
  /** How `periods` (the charts, the per-period table) group the days. */
  group: Grouping;
}

const Day = z.iso.date({ error: 'must be a date YYYY-MM-DD' });

/** The query, or why it is refused (a 400's reason). */
export function parseQuery(
  input: Record<string, unknown>,
  channels: readonly string[],
  today: string,
  /** The widget sites and roles counted so far (`RollupStore.sites`, `roles`). */
  sites: readonly string[] = [],
  roles: readonly string[] = [],
): { query: ReportQuery } | { error: string } {
  const schema = z.object({
    from: Day.optional(),
    to: Day.optional(),
    preset: z.enum(Object.keys(PRESETS) as [Preset, ...Preset[]], { error: `must be one of ${Object.keys(PRESETS).join(', ')}` }).optional(),
    channel: z.enum(['all', ...channels], { error: `must be all or one of ${channels.join(', ')}` }).default('all'),
    group: z.enum(GROUPINGS, { error: `must be one of ${GROUPINGS.join(', ')}` }).default('day'),
    site: z
      .enum(['all', ...sites], { error: sites.length > 0 ? `must be all or one of ${sites.join(', ')}` : 'must be all (no site counted yet)' })
      .default('all'),
    role: z
      .enum(['all', ...roles], { error: roles.length > 0 ? `must be all or one of ${roles.join(', ')}` : 'must be all (no role counted yet)' })
      .default('all'),
  });
  const single = (value: unknown) => (Array.isArray(value) ? value : value === '' ? undefined : value);
  const parsed = schema.safeParse({
    from: single(input.from),
    to: single(input.to),
    preset: single(input.preset),
    channel: single(input.channel),
    group: single(input.group),
    site: single(input.site),
    role: single(input.role),
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return { error: `${issue?.path.join('.') || 'query'} ${issue?.message ?? 'is invalid'}` };
  }
  // A preset names the days itself (from and to beside it are ignored).
  const named = parsed.data.preset ? presetRange(parsed.data.preset, today) : undefined;
  const to = named?.to ?? parsed.data.to ?? today;
  const from = named?.from ?? parsed.data.from ?? addDays(to, -(DEFAULT_RANGE_DAYS - 1));
  if (from > to) return { error: 'from must not be after to' };
  if (parsed.data.site !== 'all' && parsed.data.role !== 'all') return { error: 'choose a site or a role, not both' };
  const days = Math.round((Date.parse(to) - Date.parse(from)) / 86_400_000) + 1;
  if (days > MAX_RANGE_DAYS) return { error: `the range is ${days} days; at most ${MAX_RANGE_DAYS}` };
  return { query: { from, to, channel: parsed.data.channel, group: parsed.data.group, site: parsed.data.site, role: parsed.data.role } };
}

function daysBetween(from: string, to: string): string[] {
  const days: string[] = [];
  for (let day = from; day <= to && days.length <= MAX_RANGE_DAYS; day = addDays(day, 1)) days.push(day);
  return days;
}

export interface DayFigures {
  day: string;
  conversations: number;
  messagesIn: number;
  /** Everything sent to the customer: the transcript's outbound messages and `ratingMessages`. */
  messagesOut: number;
  /** The satisfaction question's messages (question, comment prompt, thanks): not in the transcript. */
  ratingMessages: number;
  handoffs: number;
  /** Conversations with a person (a hand-off or a teammate's message) or whose customer wrote again the next day. */
  notResolved: number;
  resolvedWithoutPerson: number;
  /** Whether the next day is over (before, a conversation may still come back). */
  settled: boolean;
  actionsRun: number;
  actionsDeclined: number;
  actionsFailed: number;
  /** Questions the business's knowledge had no answer for. */
  knowledgeMisses: number;
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
  /** Absent when a model used has no price. */
  cost?: number;
}

/**
 * Days summed per week or month (`group`); per day, the days themselves. `day` names the period (a week by its Monday, a month `YYYY-MM`).
 * Its distinct conversations are the period's own (not the days' sum).
 */
export type PeriodFigures = DayFigures & { from: string; to: string } & DistinctFigures;

export interface ReportSummary extends ReportQuery {
  days: DayFigures[];
  periods: PeriodFigures[];
  totals: DistinctFigures & {
    /** Conversation-days: a conversation counts on each day it had a customer message. */
    conversations: number;
    /** resolvedByAssistant ÷ distinctConversations. */
    resolvedByAssistantRate: number | null;
    messagesIn: number;
    messagesOut: number;
    handoffs: number;
    handoffRate: number | null;
    handoffsByTeam: Record<string, number>;
    handoffsByRole: Record<string, number>;
    /** Over settled days only. */
    resolvedWithoutPersonShare: number | null;
    teammateFirstResponse: FirstResponse;
    /** The same waits counting only the time the team was open (its `hours` in HANDOFF_TEAMS). */
    teammateFirstResponseWithinHours: FirstResponse;
    /** The same first replies by the hand-off's team, and by the teammate who wrote the reply. */
    firstReplyByTeam: Record<string, FirstReplyFigures>;
    firstReplyByTeammate: Record<string, FirstReplyFigures>;
    /** Of the hand-offs opened in the range, those ended (handed back or closed): opening to end, from the same steps. */
    resolution: { ended: number; medianSeconds: number | null; p90Seconds: number | null };
    actions: { run: number; declined: number; failed: number };
    knowledgeMisses: number;
    /** Per guidance entry: replies whose prompt quoted it, and those the judge found it applying to. */
    guidance: Record<string, { quoted: number; applied: number }>;
    model: {
      calls: number;
      inputTokens: number;
      outputTokens: number;
      byModel: Record<string, { inputTokens: number; outputTokens: number }>;
      cost?: number;
      costPerConversation?: number;
    };
  };
  /** Null without a satisfaction source, or when no question was asked in the range. */
  csat: CsatFigures | null;
  /** Hand-offs waiting now for a teammate's first reply (not the range's: the moment's); absent without a source. */
  waitingNow?: WaitingNow;
  /** The previous period (as many days, just before): its totals and satisfaction, to compare with. */
  previous?: { from: string; to: string; totals: ReportSummary['totals']; csat: CsatFigures | null };
}

const named = (metric: string, prefix: string) => decodeURIComponent(metric.slice(prefix.length));

/** The figures of `query` from its days' documents (any channel's; those of other channels are ignored). */
function summarise(query: ReportQuery, documents: readonly RollupDocument[], channels: readonly string[], today: string, prices?: ModelPrices): ReportSummary {
  const perDay = new Map<string, Record<string, number>>();
  const views = new Set(viewsOf(query, channels));
  for (const document of documents) {
    const [day = '', channel = ''] = document._id.split('|');
    if (!views.has(channel)) continue;
    const sum = perDay.get(day) ?? {};
    for (const [metric, n] of Object.entries(document.counts)) sum[metric] = (sum[metric] ?? 0) + n;
    perDay.set(day, sum);
  }
  const byTeam: Record<string, number> = {};
  const byRole: Record<string, number> = {};
  const byModel: Record<string, { inputTokens: number; outputTokens: number }> = {};
  const guidance: Record<string, { quoted: number; applied: number }> = {};
  const histogram = emptyHistogram();
  const withinHours = emptyHistogram();
  const byName = new FirstRepliesByName();
  const resolved = emptyHistogram();
  let priced = true;
  const days = daysBetween(query.from, query.to).map((day): DayFigures => {
    const counts = perDay.get(day) ?? {};
    let cost = 0;
    let dayPriced = true;
    for (const [metric, n] of Object.entries(counts)) {
      if (metric.startsWith('ho_team:')) byTeam[named(metric, 'ho_team:')] = (byTeam[named(metric, 'ho_team:')] ?? 0) + n;
      else if (metric.startsWith('ho_role:')) byRole[named(metric, 'ho_role:')] = (byRole[named(metric, 'ho_role:')] ?? 0) + n;
      else if (metric.startsWith('frt:')) histogram[Number(metric.slice(4))] = (histogram[Number(metric.slice(4))] ?? 0) + n;
      else if (metric.startsWith('frth:')) withinHours[Number(metric.slice(5))] = (withinHours[Number(metric.slice(5))] ?? 0) + n;
      else if (byName.add(metric, n)) continue;
      else if (metric.startsWith('gd_q:') || metric.startsWith('gd_a:')) {
        const entry = (guidance[named(metric, 'gd_q:')] ??= { quoted: 0, applied: 0 });
        if (metric.startsWith('gd_q:')) entry.quoted += n;
        else entry.applied += n;
      } else if (metric.startsWith('res:')) resolved[Number(metric.slice(4))] = (resolved[Number(metric.slice(4))] ?? 0) + n;
      else if (metric.startsWith('tok_in:') || metric.startsWith('tok_out:')) {
        const input = metric.startsWith('tok_in:');
        const model = named(metric, input ? 'tok_in:' : 'tok_out:');
        const tokens = (byModel[model] ??= { inputTokens: 0, outputTokens: 0 });
        if (input) tokens.inputTokens += n;
        else tokens.outputTokens += n;
        const price = prices?.[model];
        if (price) cost += (n * (input ? price.inputPerMTok : price.outputPerMTok)) / 1_000_000;
        else if (n > 0) dayPriced = false;
      }
    }
    priced &&= dayPriced;
    const n = (metric: string) => counts[metric] ?? 0;
    const inputTokens = Object.entries(counts).reduce((sum, [metric, value]) => sum + (metric.startsWith('tok_in:') ? value : 0), 0);
    const outputTokens = Object.entries(counts).reduce((sum, [metric, value]) => sum + (metric.startsWith('tok_out:') ? value : 0), 0);
    return {
      day,
      conversations: n('conv'),
      messagesIn: n('in'),
      messagesOut: n('out'),
      ratingMessages: 0,
      handoffs: n('ho'),
      notResolved: n('unres'),
      resolvedWithoutPerson: Math.max(0, n('conv') - n('unres')),
      settled: addDays(day, 2) <= today,
      actionsRun: n('act_run'),
      actionsDeclined: n('act_declined'),
      actionsFailed: n('act_failed'),
      knowledgeMisses: n('miss'),
      modelCalls: n('calls'),
      inputTokens,
      outputTokens,
      ...(prices && dayPriced ? { cost } : {}),
    };
  });
  const total = (field: keyof DayFigures, list = days) => list.reduce((sum, day) => sum + (typeof day[field] === 'number' ? day[field] : 0), 0);
  const settled = days.filter((day) => day.settled);
  const settledConversations = total('conversations', settled);
  const conversations = total('conversations');
  const cost = prices && priced ? total('cost') : undefined;
  return {
    ...query,
    days,
    periods: groupRows(days, query.group).map((period) => ({ ...period, ...NO_DISTINCT })),
    totals: {
      conversations,
      ...NO_DISTINCT,
      resolvedByAssistantRate: null,
      messagesIn: total('messagesIn'),
      messagesOut: total('messagesOut'),
      handoffs: total('handoffs'),
      handoffRate: conversations > 0 ? total('handoffs') / conversations : null,
      handoffsByTeam: byTeam,
      handoffsByRole: byRole,
      resolvedWithoutPersonShare: settledConversations > 0 ? total('resolvedWithoutPerson', settled) / settledConversations : null,
      teammateFirstResponse: firstResponse(histogram),
      teammateFirstResponseWithinHours: firstResponse(withinHours),
      firstReplyByTeam: byName.figures('team'),
      firstReplyByTeammate: byName.figures('tm'),
      resolution: (({ replies, medianSeconds, p90Seconds }) => ({ ended: replies, medianSeconds, p90Seconds }))(firstResponse(resolved)),
      actions: { run: total('actionsRun'), declined: total('actionsDeclined'), failed: total('actionsFailed') },
      knowledgeMisses: total('knowledgeMisses'),
      guidance,
      model: {
        calls: total('modelCalls'),
        inputTokens: total('inputTokens'),
        outputTokens: total('outputTokens'),
        byModel,
        ...(cost !== undefined ? { cost, ...(conversations > 0 ? { costPerConversation: cost / conversations } : {}) } : {}),
      },
    },
    csat: null,
  };
}

type SatisfactionPart = { figures: CsatFigures; messagesByDay: Record<string, number> };

/** The summary with the satisfaction question's messages added to each day's messages out, and its figures (the previous period's too). */
export function withSatisfaction(summary: ReportSummary, read: SatisfactionPart | null, previousRead: SatisfactionPart | null = null): ReportSummary {
  const previous = summary.previous && {
    ...summary.previous,
    totals: {
      ...summary.previous.totals,
      messagesOut: summary.previous.totals.messagesOut + Object.values(previousRead?.messagesByDay ?? {}).reduce((sum, n) => sum + n, 0),
    },
    csat: previousRead?.figures ?? null,
  };
  if (!read) return { ...summary, csat: null, ...(previous ? { previous } : {}) };
  const days = summary.days.map((day) => {
    const rating = read.messagesByDay[day.day] ?? 0;
    return { ...day, ratingMessages: rating, messagesOut: day.messagesOut + rating };
  });
  const added = days.reduce((sum, day) => sum + day.ratingMessages, 0);
  return {
    ...summary,
    days,
    // The periods' distinct conversations are theirs, not their days' sum: kept as read.
    periods: groupRows(days, summary.group).map((period, index) => ({ ...NO_DISTINCT, ...summary.periods[index], ...period })),
    totals: { ...summary.totals, messagesOut: summary.totals.messagesOut + added },
    csat: read.figures,
    ...(previous ? { previous } : {}),
  };
}

/** The roll-up channels a query reads: its channel (or every one), or their site's or role's view (`web~harbour`, `web~@sales`). */
function viewsOf(query: ReportQuery, channels: readonly string[]): string[] {
  const wanted = query.channel === 'all' ? channels : [query.channel];
  if (query.role !== 'all') return wanted.map((channel) => roleView(channel, query.role));
  return query.site === 'all' ? [...wanted] : wanted.map((channel) => siteView(channel, query.site));
}

/** The ids of the range's documents: every day × channel (or its site's view). */
function rangeIds(query: ReportQuery, channels: readonly string[]): string[] {
  const views = viewsOf(query, channels);
  return daysBetween(query.from, query.to).flatMap((day) => views.map((channel) => rollupId(day, channel)));
}

/** The range's summary and, in `previous`, the previous period's totals: one read of both ranges' documents. */
export async function readSummary(
  store: RollupStore,
  query: ReportQuery,
  channels: readonly string[],
  today: string,
  prices?: ModelPrices,
): Promise<ReportSummary> {
  const before = { ...query, ...previousRange(query.from, query.to) };
  const documents = await store.read([...rangeIds(before, channels), ...rangeIds(query, channels)]);
  const previous = summarise(before, documents, channels, today, prices);
  const current = summarise(query, documents, channels, today, prices);
  // A role's view keeps no conversations (only what the role did): no figure per conversation then.
  const perConversation = query.role === 'all';
  const distinct = perConversation ? await readDistinct(store, [query, before, ...current.periods], viewsOf(query, channels), today) : [];
  const totalsOf = (totals: ReportSummary['totals'], figures: DistinctFigures = NO_DISTINCT): ReportSummary['totals'] => {
    const withDistinct = { ...totals, ...figures, resolvedByAssistantRate: resolvedByAssistantRate(figures) };
    if (perConversation) return withDistinct;
    const { costPerConversation: _perConversation, ...model } = totals.model;
    return { ...withDistinct, handoffRate: null, resolvedWithoutPersonShare: null, model };
  };
  return {
    ...current,
    periods: current.periods.map((period, index) => ({ ...period, ...(distinct[index + 2] ?? NO_DISTINCT) })),
    totals: totalsOf(current.totals, distinct[0]),
    previous: { from: before.from, to: before.to, totals: totalsOf(previous.totals, distinct[1]), csat: null },
  };
}
