/**
 * What a report counts, as roll-up events: each transcript record, hand-off, finished action
 * and metered turn becomes at most one event of a day and channel — the day in the reports' time
 * zone (REPORTS_TIME_ZONE, `zone` here; model use keeps the usage store's UTC day). The same functions turn
 * the live records (the transcript writer's hook) and the stored documents (`rebuild.ts`) into
 * events, so a rebuild counts exactly what the live roll-up counted. Pure: no I/O.
 */
import type { TranscriptRecord } from '../store/outbox.js';

/** Upper bounds (seconds) of the teammate first-response histogram; the last bucket is open. */
export const RESPONSE_BUCKETS = [60, 300, 900, 1800, 3600, 7200, 14_400, 28_800, 86_400, 172_800] as const;

/** A roll-up document's id: `YYYY-MM-DD|channel`. */
export const rollupId = (day: string, channel: string) => `${day}|${channel}`;
const dayFormats = new Map<string, Intl.DateTimeFormat>();
/** The day (`YYYY-MM-DD`) an instant falls on in `zone` (an IANA time zone; UTC by default). */
export function dayOf(at: string | Date, zone = 'UTC'): string {
  const date = typeof at === 'string' ? new Date(at) : at;
  if (zone === 'UTC') return date.toISOString().slice(0, 10);
  let format = dayFormats.get(zone);
  if (!format) {
    // en-CA writes dates as YYYY-MM-DD.
    format = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' });
    dayFormats.set(zone, format);
  }
  return format.format(date);
}

const DAY_MS = 86_400_000;
export const addDays = (day: string, days: number) => new Date(Date.parse(`${day}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);

/** A metric name safe as a MongoDB field and a Redis hash field part (no `.`, `$` or `|`). */
export const metricPart = (value: string) => encodeURIComponent(value).replace(/\./g, '%2E');

interface EventBase {
  /** Dedupe id: a record counted twice (a retried batch) counts once. Empty: not deduped. */
  id: string;
  day: string;
  channel: string;
  /** A widget site's conversation: the event counts in its site's view too (`siteView`). */
  site?: string;
  /** The role that wrote a reply, opened a hand-off or made model calls: the event counts in its role's view too (`roleView`). */
  role?: string;
}

/**
 * The widget site of a conversation (`web:<site>:<visitor>:<chat>`); none for other channels.
 * Only the site key: nothing of the visitor.
 */
export function siteOf(conversation: string): string | undefined {
  const [channel, site] = conversation.split(':');
  return channel === 'web' && site ? site : undefined;
}
const withSite = (conversation: string | undefined) => {
  const site = conversation === undefined ? undefined : siteOf(conversation);
  return site === undefined ? {} : { site };
};

/** A site's view of a channel, as a roll-up document's channel (`web~harbour`); `~` never occurs in a channel id or an encoded site. */
export const siteView = (channel: string, site: string) => `${channel}~${viewPart(site)}`;
/** A role's view of a channel (`web~@sales`): `@` never starts an encoded site. */
export const roleView = (channel: string, role: string) => `${channel}~@${viewPart(role)}`;
const viewPart = (value: string) => metricPart(value).replace(/~/g, '%7E');

export type RollupEvent =
  | (EventBase & { kind: 'in'; conversation: string })
  /**
   * `author`: a teammate's name (their role `teammate:<name>`), for the first reply per teammate.
   * `guidance`: on a reply's first part, the business's guidance entries its prompt quoted and those the judge found applying.
   */
  | (EventBase & {
      kind: 'out';
      conversation: string;
      teammate: boolean;
      at: number;
      message: string;
      author?: string;
      guidance?: { quoted: readonly string[]; applied: readonly string[] };
    })
  /** A message the channel took (it has a delivery id): a teammate's is a reply that reached the customer. */
  | (EventBase & { kind: 'delivered'; message: string })
  | (EventBase & { kind: 'handoff'; conversation: string; team: string; role: string; at: number; handoff: string })
  /** A hand-off ended (handed back or closed): a teammate's message written after it answers nothing of it. */
  | (EventBase & { kind: 'handoff_end'; conversation: string; handoff: string; at: number })
  | (EventBase & { kind: 'action'; outcome: 'run' | 'declined' | 'failed' })
  | (EventBase & { kind: 'miss'; count?: number })
  /** A hand-off's end, as the time from its opening: counted on the day and channel it opened. */
  | (EventBase & { kind: 'resolved'; seconds: number })
  | (EventBase & { kind: 'usage'; model: string; calls: number; inputTokens: number; outputTokens: number });

/** A message (inbound or a reply part, a teammate's, an apology) as an event. */
export function messageEvent(
  message: {
    _id: string;
    conversationId: string;
    channel: string;
    direction: 'inbound' | 'outbound';
    roleId?: string | undefined;
    createdAt: string | Date;
    guidance?: { entries?: readonly string[]; applied?: readonly string[] } | undefined;
  },
  zone?: string,
): RollupEvent {
  const base = {
    id: `m:${message._id}`,
    day: dayOf(message.createdAt, zone),
    channel: message.channel,
    conversation: message.conversationId,
    ...withSite(message.conversationId),
  };
  if (message.direction === 'inbound') return { ...base, kind: 'in' };
  const teammate = message.roleId?.startsWith('teammate:') === true;
  return {
    ...base,
    ...(!teammate && message.roleId ? { role: message.roleId } : {}),
    kind: 'out',
    teammate,
    at: new Date(message.createdAt).getTime(),
    message: message._id,
    ...(teammate ? { author: message.roleId?.slice('teammate:'.length) ?? '' } : {}),
    ...(message.guidance ? { guidance: { quoted: message.guidance.entries ?? [], applied: message.guidance.applied ?? [] } } : {}),
  };
}

/** A message the channel accepted (its delivery id recorded): not deduped, the wait it ends is removed once counted. */
export const deliveredEvent = (messageId: string, at: string | Date, zone?: string): RollupEvent => ({
  id: '',
  kind: 'delivered',
  day: dayOf(at, zone),
  channel: '',
  message: messageId,
});

/** A hand-off's end (`handed_back` or `closed`), at `endedAt`. */
export function handoffEndEvent(handoff: { _id: string; conversationId: string; channel: string; endedAt: Date | string }, zone?: string): RollupEvent {
  const at = new Date(handoff.endedAt);
  return {
    id: '',
    kind: 'handoff_end',
    day: dayOf(at, zone),
    channel: handoff.channel,
    conversation: handoff.conversationId,
    handoff: handoff._id,
    at: at.getTime(),
  };
}

/** A hand-off's resolution time (opening to `endedAt`), once per hand-off, on the day it opened. */
export function resolutionEvent(
  handoff: { _id: string; channel: string; conversationId?: string; roleId?: string; createdAt: Date | string; endedAt: Date | string },
  zone?: string,
): RollupEvent {
  const opened = new Date(handoff.createdAt);
  const seconds = Math.max(0, Math.round((new Date(handoff.endedAt).getTime() - opened.getTime()) / 1000));
  const role = handoff.roleId ? { role: handoff.roleId } : {};
  return {
    id: `r:${handoff._id}`,
    kind: 'resolved',
    day: dayOf(opened, zone),
    channel: handoff.channel,
    ...withSite(handoff.conversationId),
    ...role,
    seconds,
  };
}

/**
 * A confirmed action's end: `done` ran, `failed` failed, `cancelled` because the customer (or a
 * teammate) said no is declined. Other states (proposed, running, expired, cancelled for another
 * reason) count nothing.
 */
export function actionEvent(
  action: { _id: string; channel?: unknown; conversationId?: unknown; state?: unknown; reason?: unknown; updatedAt?: unknown },
  zone?: string,
): RollupEvent | undefined {
  if (typeof action.channel !== 'string' || (typeof action.updatedAt !== 'string' && !(action.updatedAt instanceof Date))) return undefined;
  const outcome =
    action.state === 'done'
      ? 'run'
      : action.state === 'failed'
        ? 'failed'
        : action.state === 'cancelled' && typeof action.reason === 'string' && /^declined( by |$)/.test(action.reason)
          ? 'declined'
          : undefined;
  if (!outcome) return undefined;
  const site = typeof action.conversationId === 'string' ? withSite(action.conversationId) : {};
  return { id: `a:${action._id}`, day: dayOf(action.updatedAt, zone), channel: action.channel, ...site, kind: 'action', outcome };
}

export function handoffEvent(
  handoff: {
    _id: string;
    conversationId: string;
    channel: string;
    team: string;
    roleId: string;
    createdAt: Date | string;
  },
  zone?: string,
): RollupEvent {
  const at = new Date(handoff.createdAt);
  return {
    id: `h:${handoff._id}`,
    day: dayOf(at, zone),
    channel: handoff.channel,
    ...withSite(handoff.conversationId),
    kind: 'handoff',
    conversation: handoff.conversationId,
    team: handoff.team,
    role: handoff.roleId,
    at: at.getTime(),
    handoff: handoff._id,
  };
}

/**
 * The events of transcript records: messages (their first record), the channel's acceptance of
 * a message (its `delivery` record, once per message sent) and actions' ends. Statuses count
 * nothing. With `marks` (each record's outbox entry), each event's mark beside it.
 */
export function transcriptEvents(records: readonly TranscriptRecord[], marks?: readonly string[], zone?: string): { events: RollupEvent[]; marks?: string[] } {
  const events: RollupEvent[] = [];
  const eventMarks: string[] = [];
  for (const [index, record] of records.entries()) {
    let event: RollupEvent | undefined;
    if (record.kind === 'message') event = messageEvent(record.message, zone);
    else if (record.kind === 'delivery') event = deliveredEvent(record.messageId, record.at, zone);
    else if (record.kind === 'action') event = actionEvent(record.action, zone);
    if (!event) continue;
    events.push(event);
    eventMarks.push(marks?.[index] ?? '');
  }
  return marks ? { events, marks: eventMarks } : { events };
}
