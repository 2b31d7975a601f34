/**
 * `npm run reports -- rebuild`: the roll-ups counted again from what MongoDB holds — every
 * message, hand-off (and its end), confirmed action and model usage total — through the same
 * events and the same Redis script as the live roll-up, so a rebuild equals what the writer
 * counted. Knowledge misses are in no collection (only the roll-ups counted them): each day's
 * count is carried over. It reads whole collections (a batch job, never near a turn); hand-offs,
 * their ends and teammates' messages (with their acceptance by the channel: a delivery id) go
 * last, in time order (the first-response wait). Documents from the oldest message's day on are
 * replaced; older days (their messages gone with retention) keep theirs untouched. It holds the
 * fleet's flush lock throughout: live writers keep counting into Redis (deduplicating by record
 * id while it runs, against the recent days' sets emptied with the totals at the start, so a
 * record is counted once, by whichever sees it first) and what they count is written with the
 * rebuild's figures at the end. */
import type { Connection } from 'mongoose';
import type { Logger } from '../logger.js';
import {
  actionEvent,
  addDays,
  dayOf,
  deliveredEvent,
  handoffEndEvent,
  handoffEvent,
  messageEvent,
  resolutionEvent,
  type RollupEvent,
} from './rollup-events.js';
import { HORIZON_DAYS, ROLLUP_COLLECTION, type RollupStore } from './rollup-store.js';

const EVENTS_PER_SCRIPT = 500;
const TIMED_ORDER: readonly RollupEvent['kind'][] = ['handoff', 'out', 'delivered', 'handoff_end'];

interface RebuildResult {
  messages: number;
  handoffs: number;
  actions: number;
  usage: number;
  days: number;
}

export async function rebuildRollups(options: {
  connection: Connection;
  store: RollupStore;
  channels: readonly string[];
  logger: Logger;
  /** The reports' time zone (REPORTS_TIME_ZONE): the days records count on. */
  timeZone?: string;
}): Promise<RebuildResult> {
  // No flush but the rebuild's own meanwhile: what live writers count goes on into Redis's totals,
  // deduped against the rebuild's records, and is written with them at the end.
  // Meanwhile every count dedupes by record id too (the rebuilding flag), so a record a live
  // writer counts while the rebuild reads it is counted once; the ids go when it is done.
  return options.store.exclusive(async (flush) => {
    await options.store.rebuilding(true);
    try {
      return await recount(options, flush);
    } finally {
      await options.store.rebuilding(false);
      const today = dayOf(new Date(), options.timeZone);
      await options.store.reset(
        Array.from({ length: HORIZON_DAYS + 3 }, (_, index) => addDays(today, 1 - index)),
        [],
        { daySetsOnly: true },
      );
    }
  });
}

async function recount(options: Parameters<typeof rebuildRollups>[0], flush: () => Promise<void>): Promise<RebuildResult> {
  const { connection, store, logger } = options;
  const zone = options.timeZone;
  const today = dayOf(new Date(), zone);
  const oldest = addDays(today, -HORIZON_DAYS);
  // What was counted before is written first: misses (in no collection) are carried over from the documents.
  await flush();
  const misses = await connection
    .collection<{ _id: string; counts?: { miss?: number } }>(ROLLUP_COLLECTION)
    .find({ 'counts.miss': { $gt: 0 } }, { projection: { 'counts.miss': 1 } })
    .toArray();
  // The days live records still arrive for: their sets emptied with the totals in one DEL, so from
  // here a record is counted once, by whichever of a live writer and the rebuild sees it first.
  const recent = Array.from({ length: HORIZON_DAYS + 3 }, (_, index) => addDays(today, 1 - index));
  // The channels live writers count on: those configured and any a roll-up document names.
  const documented = await connection
    .collection<{ _id: string }>(ROLLUP_COLLECTION)
    .find({}, { projection: { _id: 1 } })
    .toArray();
  const liveChannels = [...new Set([...options.channels, ...documented.map(({ _id }) => _id.split('|')[1] ?? '')])].filter(Boolean);
  await store.reset(recent, liveChannels);
  const days = new Set<string>();
  const messageDays = new Set<string>();
  /** `day|channel` whose sets were emptied: each once, before any event of it (or its neighbours) is counted. */
  const cleared = new Set<string>(recent.flatMap((day) => liveChannels.map((channel) => `${day}|${channel}`)));
  const seenCleared = new Set<string>(recent);
  /** The oldest message's day, once all are read: days before it keep their documents untouched (retention purged their messages). */
  const first: { day?: string } = {};
  const clear = async (events: readonly RollupEvent[]) => {
    const fresh = new Map<string, string[]>();
    // The channel's sets (a site's and a role's view keep none of their own).
    for (const { day, channel } of events) {
      for (const near of [addDays(day, -1), day, addDays(day, 1)]) {
        if (cleared.has(`${near}|${channel}`)) continue;
        cleared.add(`${near}|${channel}`);
        fresh.set(near, [...(fresh.get(near) ?? []), channel]);
      }
    }
    for (const [day, channels] of fresh) {
      await store.reset([day], channels, { daySetsOnly: true, keepSeen: seenCleared.has(day) });
      seenCleared.add(day);
    }
  };
  let pending: RollupEvent[] = [];
  const drain = async () => {
    const batch = pending;
    pending = [];
    await clear(batch);
    await store.count(batch);
  };
  const push = async (event: RollupEvent) => {
    if (first.day !== undefined && event.day < first.day && event.kind !== 'delivered' && event.kind !== 'handoff_end') return;
    days.add(event.day);
    // Older days take no late record: no dedupe set for them (a year of ids would fill Redis).
    pending.push(event.day < oldest ? { ...event, id: '' } : event);
    if (pending.length >= EVENTS_PER_SCRIPT) await drain();
  };
  const result: RebuildResult = { messages: 0, handoffs: 0, actions: 0, usage: 0, days: 0 };
  /** Hand-offs and teammates' messages, counted last in time order. */
  const timed: { at: number; event: RollupEvent }[] = [];

  const messages = connection
    .collection('messages')
    .find(
      {},
      { projection: { _id: 1, conversationId: 1, channel: 1, direction: 1, roleId: 1, createdAt: 1, channelMessageId: 1, guidance: 1 }, batchSize: 1000 },
    );
  for await (const message of messages) {
    if (typeof message.conversationId !== 'string' || typeof message.channel !== 'string' || !(message.createdAt instanceof Date)) continue;
    const event = messageEvent(message as unknown as Parameters<typeof messageEvent>[0], zone);
    result.messages += 1;
    messageDays.add(event.day);
    if (event.kind === 'out' && event.teammate) {
      timed.push({ at: event.at, event });
      // The channel took it (it has a delivery id): a reply that reached the customer.
      if (typeof message.channelMessageId === 'string') timed.push({ at: event.at, event: deliveredEvent(event.message, message.createdAt, zone) });
    } else await push(event);
  }
  first.day = [...messageDays].sort()[0] ?? '9999-12-31';
  for await (const handoff of connection
    .collection('handoffs')
    .find({}, { projection: { _id: 1, conversationId: 1, channel: 1, team: 1, roleId: 1, createdAt: 1, endedAt: 1 } })) {
    if (!(handoff.createdAt instanceof Date)) continue;
    const event = handoffEvent(handoff as unknown as Parameters<typeof handoffEvent>[0], zone);
    result.handoffs += 1;
    timed.push({ at: new Date(handoff.createdAt).getTime(), event });
    if (handoff.endedAt instanceof Date) {
      timed.push({ at: handoff.endedAt.getTime(), event: handoffEndEvent(handoff as unknown as Parameters<typeof handoffEndEvent>[0], zone) });
      await push(resolutionEvent(handoff as unknown as Parameters<typeof resolutionEvent>[0], zone));
    }
  }
  for await (const action of connection
    .collection('actions')
    .find({}, { projection: { _id: 1, channel: 1, conversationId: 1, state: 1, reason: 1, updatedAt: 1 } })) {
    const event = actionEvent(action as unknown as Parameters<typeof actionEvent>[0], zone);
    if (!event) continue;
    result.actions += 1;
    await push(event);
  }
  for await (const usage of connection.collection<{ _id: string; calls?: number; inputTokens?: number; outputTokens?: number }>('model_usage').find({})) {
    const [day = '', role = '', channel = '', ...model] = usage._id.split('|');
    result.usage += 1;
    await push({
      id: '',
      kind: 'usage',
      day,
      channel,
      ...(role ? { role } : {}),
      model: model.join('|'),
      calls: usage.calls ?? 0,
      inputTokens: usage.inputTokens ?? 0,
      outputTokens: usage.outputTokens ?? 0,
    });
  }
  for (const { _id, counts } of misses) {
    const [day = '', channel = ''] = _id.split('|');
    await push({ id: '', kind: 'miss', day, channel, count: counts?.miss ?? 0 });
  }
  await drain();
  // At the same millisecond: a hand-off's wait opens, a teammate's message is written, the channel takes it, then a hand-off ends.
  timed.sort((a, b) => a.at - b.at || TIMED_ORDER.indexOf(a.event.kind) - TIMED_ORDER.indexOf(b.event.kind));
  for (const { event } of timed) await push(event);
  await drain();
  // Days from the oldest message on are counted anew (their documents replaced); older days keep theirs.
  if (messageDays.size > 0) {
    const existing = await connection
      .collection<{ _id: string }>(ROLLUP_COLLECTION)
      .find({}, { projection: { _id: 1 } })
      .toArray();
    await store.drop(existing.map((document) => document._id).filter((id) => id >= (first.day ?? '')));
  }
  await flush();
  // Sets of days past the horizon were only the rebuild's: gone now (no live record comes for them).
  for (const pair of cleared) {
    const [day = '', channel = ''] = pair.split('|');
    if (day < oldest) await store.reset([day], [channel], { daySetsOnly: true });
  }
  result.days = days.size;
  logger.info('reports-rebuilt', { ...result });
  return result;
}
