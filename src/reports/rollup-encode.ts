/**
 * The roll-up's events as the count script (`rollup-script.ts`) reads them, and its keys: the
 * fixed ones first, then each day set and mark set an event names, once, referred to by its
 * index. An event of a widget site's conversation also counts in its site's view (the channel
 * `<channel>~<site>`: the channel's figures echoed, `sf`), and an event a role made (a reply, a
 * hand-off, model use) in its role's view (`<channel>~@<role>`, `e.x`: no day sets), so a report
 * can pick a site or a role.
 */
import { addDays, metricPart, RESPONSE_BUCKETS, roleView, siteView, type RollupEvent } from './rollup-events.js';
import { conversationTag, DISTINCT_CONVERSATIONS, DISTINCT_WITH_PERSON } from './rollup-script.js';

/** Where a batch's events came from: each event's outbox entry (`marks[i]` for `events[i]`). */
export interface Marked {
  /** Per event, the mark of the outbox entry (or part of one) it was read from. */
  marks: readonly string[];
  /** The Redis set a mark is kept in (by the entry's day: a mark left behind goes with it). */
  setOf(mark: string): string;
}

type DayKey = (set: string, day: string, channel?: string) => string;

/** A reply's guidance entries as the script reads them (each a metric name part; none: left out). */
function guidanceOf(guidance: { quoted: readonly string[]; applied: readonly string[] }) {
  return {
    ...(guidance.quoted.length > 0 ? { gq: guidance.quoted.map(metricPart) } : {}),
    ...(guidance.applied.length > 0 ? { ga: guidance.applied.map(metricPart) } : {}),
  };
}

/** The channel view's figure prefix and day sets (`sets`: whether the event's kind uses them; `known`: a customer message whose sets were asked before). */
function viewOf(event: RollupEvent, channel: string, at: (key: string) => number, dayKey: DayKey, sets: boolean, known: boolean) {
  const { day } = event;
  const f = `${day}|${channel}|`;
  if (!sets) return { f };
  if (event.kind === 'in') {
    if (known) return { f };
    const previous = addDays(day, -1);
    return {
      f,
      a: at(dayKey('active', day, channel)),
      p: at(dayKey('person', day, channel)),
      u: at(dayKey('unres', day, channel)),
      an: at(dayKey('active', addDays(day, 1), channel)),
      hc: at(dayKey(DISTINCT_CONVERSATIONS, day, channel)),
      ap: at(dayKey('active', previous, channel)),
      up: at(dayKey('unres', previous, channel)),
      fp: `${previous}|${channel}|`,
    };
  }
  return {
    f,
    a: at(dayKey('active', day, channel)),
    p: at(dayKey('person', day, channel)),
    u: at(dayKey('unres', day, channel)),
    hp: at(dayKey(DISTINCT_WITH_PERSON, day, channel)),
  };
}

/**
 * A site's view: its figure prefixes (the script adds each of the channel's figures of the event
 * to it: a conversation is one site's, so the channel's day sets decide for the site too) and its
 * own distinct-conversation HyperLogLogs.
 */
function siteOf(event: RollupEvent, view: string, at: (key: string) => number, dayKey: DayKey, channelView: { fp?: string; hc?: number; hp?: number }) {
  const { day } = event;
  return {
    sf: `${day}|${view}|`,
    ...(channelView.fp ? { sfp: `${addDays(day, -1)}|${view}|` } : {}),
    ...(channelView.hc ? { hcs: at(dayKey(DISTINCT_CONVERSATIONS, day, view)) } : {}),
    ...(channelView.hp ? { hps: at(dayKey(DISTINCT_WITH_PERSON, day, view)) } : {}),
  };
}

export function encodeEvents(
  events: readonly RollupEvent[],
  fixed: readonly string[],
  dayKey: DayKey,
  marked?: Marked,
  /** An `in` event whose conversation this process already put in the day's set: counted, its sets not asked. */
  known: (event: RollupEvent) => boolean = () => false,
): { keys: string[]; encoded: unknown[]; marks: [number, string][] } {
  const keys = [...fixed];
  const index = new Map<string, number>();
  const at = (key: string) => {
    let found = index.get(key);
    if (found === undefined) {
      keys.push(key);
      found = keys.length;
      index.set(key, found);
    }
    return found;
  };
  const marks: [number, string][] = [];
  const markIndex = new Map<string, number>();
  const markOf = (mark: string) => {
    let found = markIndex.get(mark);
    if (found === undefined) {
      marks.push([at(marked?.setOf(mark) ?? ''), mark]);
      found = marks.length;
      markIndex.set(mark, found);
    }
    return found;
  };
  const encoded = events.map((event, position) => {
    const { day, channel } = event;
    const mark = marked?.marks[position];
    const { site, role } = event;
    // The kinds whose day sets count (a customer's message, a teammate's, a hand-off).
    const sets = event.kind === 'in' || event.kind === 'handoff' || (event.kind === 'out' && event.teammate);
    const channelView = viewOf(event, channel, at, dayKey, sets, event.kind === 'in' && known(event));
    // A role's view keeps no day sets: what the role did (its replies, hand-offs, model use).
    const views = role === undefined ? [] : [{ f: `${day}|${roleView(channel, role)}|` }];
    const base = {
      i: event.id,
      k: event.kind,
      ...channelView,
      ...(site === undefined ? {} : siteOf(event, siteView(channel, site), at, dayKey, channelView)),
      ...(views.length > 0 ? { x: views } : {}),
      ...(site === undefined ? {} : { st: metricPart(site) }),
      ...(role === undefined ? {} : { rl: metricPart(role) }),
      ...(event.id ? { s: at(dayKey('seen', day)) } : {}),
      ...(mark ? { b: markOf(mark) } : {}),
    };
    switch (event.kind) {
      case 'in':
        return 'a' in channelView ? { ...base, v: conversationTag(event.conversation) } : base;
      case 'out':
        return event.teammate
          ? { ...base, v: conversationTag(event.conversation), t: event.at, tm: true, m: event.message, w: metricPart(event.author ?? '') }
          : { ...base, tm: false, ...(event.guidance ? guidanceOf(event.guidance) : {}) };
      case 'handoff':
        return {
          ...base,
          v: conversationTag(event.conversation),
          t: event.at,
          team: metricPart(event.team),
          role: metricPart(event.role),
          h: event.handoff,
          // The wait's views: the channel, then its site's and its role's (a first reply counts in each).
          wf: `${day}|${[channel, ...(site === undefined ? [] : [siteView(channel, site).slice(channel.length + 1)]), ...(role === undefined ? [] : [roleView(channel, role).slice(channel.length + 1)])].join('~')}|`,
        };
      case 'delivered':
        return { ...base, m: event.message };
      case 'handoff_end':
        return { ...base, v: conversationTag(event.conversation), h: event.handoff, t: event.at };
      case 'action':
        return { ...base, o: event.outcome };
      case 'miss':
        return { ...base, n: event.count ?? 1 };
      case 'resolved': {
        const bucket = RESPONSE_BUCKETS.findIndex((bound) => event.seconds <= bound);
        return { ...base, rb: bucket === -1 ? RESPONSE_BUCKETS.length : bucket };
      }
      case 'usage':
        return { ...base, m: metricPart(event.model), n: event.calls, ti: event.inputTokens, to: event.outputTokens };
    }
  });
  return { keys, encoded, marks };
}
