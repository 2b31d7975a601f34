/**
 * Daily roll-ups: one MongoDB document per day and channel (`_id` `2026-12-01|whatsapp`; the
 * shop's local day, REPORTS_TIME_ZONE), its `counts` the day's totals. Events are counted in Redis
 * first, one Lua script per batch (`rollup-script.ts`: the transcript writer's batch, its
 * figures summed and added once per field), deduplicated by the batch's outbox entries (a
 * retried batch counts once; an entry's mark leaves Redis with the entry, `release`), keeping
 * the day's sets of conversations a figure needs (with a customer message, with a person, not
 * resolved) and the hand-offs waiting for a teammate's first reply. A widget site's and a role's
 * figures are a view of their channel of their own (`web~harbour`, `whatsapp~@sales`: documents,
 * day sets and waits alike), counted in the same script; distinct conversations come from
 * HyperLogLogs per day and view (`distinct-count.ts`), kept DISTINCT_KEEP_DAYS. A flush (every
 * `flushIntervalMs`, and before every report) adds what was counted since the last one to
 * MongoDB, exactly once (`rollup-flush.ts`). Redis keeps a day's sets for HORIZON_DAYS after its
 * last record. Reads are by `_id` only: the day × channel ids of the range, `$in` in batches of 20.
 */
import type { Connection } from 'mongoose';
import type { Logger } from '../logger.js';
import { KEY_PREFIX, type RedisClient } from '../redis.js';
import type { TeamHours } from '../handoff/team-hours.js';
import { openMsBetween } from './open-hours.js';
import { createRollupFlusher } from './rollup-flush.js';
import { addDays, RESPONSE_BUCKETS, type RollupEvent } from './rollup-events.js';
import { encodeEvents } from './rollup-encode.js';
import { countDistinct } from './distinct-count.js';
import { countScript } from './rollup-script.js';

export const ROLLUP_COLLECTION = 'report_rollups';
/** Days Redis keeps a day's sets after its last record (late records: a customer coming back the next day). */
export const HORIZON_DAYS = 3;
/**
 * Days Redis keeps a day's distinct-conversation HyperLogLogs after its last record: as far back
 * as a report reaches (a range of up to 400 days ending today, and the 400 before it to compare).
 */
export const DISTINCT_KEEP_DAYS = 800;
/** A hand-off waits this long for a teammate's first reply before it is dropped (uncounted). */
const WAIT_DAYS = 8;
const IDS_PER_READ = 20;
/** Conversations a process remembers in their day's set (about 100 bytes each). */
const KNOWN_ACTIVE = 20_000;

export interface RollupDocument {
  _id: string;
  counts: Record<string, number>;
}

export interface RollupStore {
  /**
   * Counts events (one Redis script). With `marks` (per event, the outbox entry it came from), an
   * entry counted before counts nothing again; without, an event with an id is deduped by it.
   */
  count(events: readonly RollupEvent[], marks?: readonly string[]): Promise<void>;
  /** Adds `n` to one figure of a day and channel (one HINCRBY: a figure deduplicated where it is told). */
  add(day: string, channel: string, metric: string, n: number): Promise<void>;
  /** Forgets these marks: their entries left the outbox (nothing brings them again). */
  release(marks: readonly string[]): Promise<void>;
  /** While a rebuild runs (`on`), every count dedupes by record id too, so a record is counted once whoever sees it first. */
  rebuilding(on: boolean): Promise<void>;
  /** Adds Redis's totals to MongoDB (`rollup-flush.ts`); one flush at a time in the fleet (a report waits a little for one in progress). */
  flush(): Promise<void>;
  /** Runs `work` holding the fleet's flush lock (no other flush meanwhile); its `flush` flushes under it. */
  exclusive<T>(work: (flush: () => Promise<void>) => Promise<T>): Promise<T>;
  /** The roll-up documents of these ids that exist (reads of ≤ 20 ids each). */
  read(ids: readonly string[]): Promise<RollupDocument[]>;
  /**
   * Removes Redis's totals, the waits and the day sets of `days` (the rebuild's first step);
   * with `daySetsOnly`, only those day sets (and with `keepSeen`, not the days' dedupe ids).
   */
  reset(days: Iterable<string>, channels: readonly string[], options?: { daySetsOnly?: boolean; keepSeen?: boolean }): Promise<void>;
  /** Deletes these roll-up documents (by `_id`, 20 at a time). */
  drop(ids: readonly string[]): Promise<void>;
  /** The widget sites counted so far (site keys; a report's site choice). */
  sites(): Promise<string[]>;
  /** The roles counted so far (a report's role choice). */
  roles(): Promise<string[]>;
  /**
   * Distinct conversations of each group of days (over `channels`): with a customer message
   * (`conversations`), and of those, how many had no person (no hand-off, no teammate's message)
   * in the same days (`withoutPerson`). One pipeline of PFCOUNTs.
   */
  distinct(groups: readonly { days: readonly string[]; channels: readonly string[] }[]): Promise<{ conversations: number; withoutPerson: number }[]>;
  /** The hand-offs whose first reply is still awaited (not answered, not ended, at most WAIT_DAYS old): one HVALS. */
  waitingHandoffs(): Promise<Set<string>>;
  start(intervalMs: number): void;
  close(): Promise<void>;
}

/** The bucket of RESPONSE_BUCKETS a wait of `seconds` falls in (the last one is open). */
function bucketOf(seconds: number): number {
  const bucket = RESPONSE_BUCKETS.findIndex((bound) => seconds <= bound);
  return bucket === -1 ? RESPONSE_BUCKETS.length : bucket;
}

/**
 * First replies' waits within the team's hours (`frth:` buckets), and both waits per team and per teammate
 * (`frt_team:`, `frth_team:`, `frt_tm:`, `frth_tm:` `<name>:<bucket>`): a second command, only for a
 * batch that answered a hand-off. `counted` is what the count script returned.
 */
async function countFirstReplies(
  redis: RedisClient,
  totalsKey: string,
  teamHours: (team: string) => TeamHours | undefined,
  counted: readonly string[],
): Promise<void> {
  const pipeline = redis.pipeline();
  for (const reply of counted) {
    const [day = '', channel = '', teammate = '', team = '', start = '', at = ''] = reply.split('|');
    const open = bucketOf(openMsBetween(teamHours(decodeURIComponent(team)), Number(start), Number(at)) / 1000);
    const elapsed = bucketOf((Number(at) - Number(start)) / 1000);
    // A hand-off counts in its channel's view and in each of its site's and role's (`web~harbour~@support`).
    const [base = '', ...parts] = channel.split('~');
    const views = [base, ...parts.map((part) => `${base}~${part}`)];
    for (const view of views) {
      const f = `${day}|${view}|`;
      pipeline.hincrby(totalsKey, `${f}frth:${open}`, 1);
      pipeline.hincrby(totalsKey, `${f}frth_n`, 1);
      pipeline.hincrby(totalsKey, `${f}frt_team:${team}:${elapsed}`, 1);
      pipeline.hincrby(totalsKey, `${f}frth_team:${team}:${open}`, 1);
      if (teammate) {
        pipeline.hincrby(totalsKey, `${f}frt_tm:${teammate}:${elapsed}`, 1);
        pipeline.hincrby(totalsKey, `${f}frth_tm:${teammate}:${open}`, 1);
      }
    }
  }
  await pipeline.exec();
}

/** Drops waits nobody will answer: hand-offs waiting longer than WAIT_DAYS, and teammates' messages the channel never took. */
async function pruneWaits(redis: RedisClient, waitingKey: string, repliesKey: string): Promise<void> {
  const waits = await redis.hgetall(waitingKey);
  const waitedTooLong = addDays(new Date().toISOString().slice(0, 10), -WAIT_DAYS);
  const stale = Object.entries(waits).filter(([, held]) => (held.split('|')[1] ?? '') < waitedTooLong);
  if (stale.length > 0) await redis.hdel(waitingKey, ...stale.map(([conversation]) => conversation));
  // A teammate's message the channel never took (refused, or its record lost) waits no longer than a hand-off.
  const unsent = await redis.hgetall(repliesKey);
  const cutoff = Date.parse(`${waitedTooLong}T00:00:00Z`);
  const lost = Object.entries(unsent).filter(([, held]) => Number(held.split('|')[0]) < cutoff);
  if (lost.length > 0) await redis.hdel(repliesKey, ...lost.map(([message]) => message));
}

export function createRollupStore(
  connection: Connection,
  redis: RedisClient,
  logger: Logger,
  /** A team's opening hours (HANDOFF_TEAMS), by team id; undefined: always open. */
  teamHours: (team: string) => TeamHours | undefined = () => undefined,
): RollupStore {
  const collection = connection.collection<RollupDocument>(ROLLUP_COLLECTION);
  // One namespace per database (tests share a Redis, not a database); one hash tag for a script's keys.
  const prefix = `${KEY_PREFIX}:{reports:${connection.name}}`;
  const totalsKey = `${prefix}:totals`;
  const waitingKey = `${prefix}:waiting`;
  const repliesKey = `${prefix}:replies`;
  const rebuildingKey = `${prefix}:rebuilding`;
  /** The widget sites counted so far (a report's site choice): site keys only. */
  const sitesKey = `${prefix}:sites`;
  /** The roles counted so far (a report's role choice). */
  const rolesKey = `${prefix}:roles`;
  const dayKey = (set: string, day: string, channel?: string) => `${prefix}:${set}:${day}${channel === undefined ? '' : `|${channel}`}`;
  /** An outbox entry's mark is kept in a set of its entry's UTC day (a stream id starts with its time in ms). */
  const markSet = (mark: string) => {
    const ms = Number(mark.slice(0, mark.indexOf('-')));
    return `${prefix}:marks:${new Date(Number.isFinite(ms) && ms > 0 ? ms : Date.now()).toISOString().slice(0, 10)}`;
  };
  const flusher = createRollupFlusher(connection, redis, { totals: totalsKey, prefix });
  const countOpenHours = (counted: readonly string[]) => countFirstReplies(redis, totalsKey, teamHours, counted);
  let flushing: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;

  /**
   * Conversations this process put in a day's set of conversations with a customer message
   * (`day|channel|conversation`, the newest KNOWN_ACTIVE): a writer's later message of one adds
   * to the day's count without asking the set again. A rebuild (no marks) always asks.
   */
  const knownActive = new Map<string, true>();
  const activeId = (event: RollupEvent) => (event.kind === 'in' ? `${event.day}|${event.channel}|${event.conversation}` : '');
  const count = async (events: readonly RollupEvent[], marks?: readonly string[]) => {
    if (events.length === 0) return;
    const fixed = [totalsKey, waitingKey, repliesKey, rebuildingKey, sitesKey, rolesKey];
    const known = (event: RollupEvent) => marks !== undefined && knownActive.has(activeId(event));
    const { keys, encoded, marks: named } = encodeEvents(events, fixed, dayKey, marks && { marks, setOf: markSet }, known);
    const args = [JSON.stringify(encoded), JSON.stringify(RESPONSE_BUCKETS), HORIZON_DAYS * 86_400, JSON.stringify(named), DISTINCT_KEEP_DAYS * 86_400];
    const counted = (await countScript(redis, keys, args)) as string[];
    for (const event of events) {
      if (event.kind !== 'in' || !marks) continue;
      knownActive.delete(activeId(event));
      knownActive.set(activeId(event), true);
      if (knownActive.size > KNOWN_ACTIVE) knownActive.delete(knownActive.keys().next().value ?? '');
    }
    if (counted.length > 0) await countOpenHours(counted);
  };

  /** Adds the totals to MongoDB (`rollup-flush.ts`), then drops waits nobody will answer. */
  const flushOnce = async (wait: boolean) => {
    if (!(await flusher.flush(wait))) return;
    await prune();
  };

  const prune = () => pruneWaits(redis, waitingKey, repliesKey);

  const flush = (wait = true) => {
    flushing = flushing.catch(() => undefined).then(() => flushOnce(wait));
    return flushing;
  };

  return {
    count,
    async add(day, channel, metric, n) {
      await redis.hincrby(totalsKey, `${day}|${channel}|${metric}`, n);
    },
    async release(marks) {
      const bySet = new Map<string, string[]>();
      for (const mark of marks) bySet.set(markSet(mark), [...(bySet.get(markSet(mark)) ?? []), mark]);
      for (const [set, members] of bySet) await redis.srem(set, ...members);
    },
    async rebuilding(on) {
      // Set for a day at most: a rebuild that died leaves the live writers deduping by id only until then.
      if (on) await redis.set(rebuildingKey, '1', 'EX', 86_400);
      else await redis.del(rebuildingKey);
    },
    flush: () => flush(true),
    exclusive: (work) =>
      flusher.exclusive(async (flushHeld) =>
        work(async () => {
          await flushHeld();
          await prune();
        }),
      ),
    async read(ids) {
      const found: RollupDocument[] = [];
      const batches: string[][] = [];
      for (let start = 0; start < ids.length; start += IDS_PER_READ) batches.push(ids.slice(start, start + IDS_PER_READ));
      // Four reads in flight at most: a 400-day range is 40 small reads, not 40 at once.
      for (let start = 0; start < batches.length; start += 4) {
        const results = await Promise.all(batches.slice(start, start + 4).map((batch) => collection.find({ _id: { $in: batch } }).toArray()));
        found.push(...results.flat());
      }
      return found;
    },
    async reset(days, channels, { daySetsOnly = false, keepSeen = false } = {}) {
      await flushing.catch(() => undefined);
      const keys = daySetsOnly ? [] : [totalsKey, waitingKey, repliesKey];
      for (const day of days) {
        if (!keepSeen) keys.push(dayKey('seen', day));
        for (const channel of channels) for (const set of ['active', 'person', 'unres']) keys.push(dayKey(set, day, channel));
      }
      // 100 keys per DEL (one hash tag, so a cluster takes them; a huge DEL would hold Redis).
      for (let start = 0; start < keys.length; start += 100) await redis.del(...keys.slice(start, start + 100));
      logger.info('reports-rollups-reset', { keys: keys.length, daySetsOnly });
    },
    async sites() {
      return (await redis.smembers(sitesKey)).map((site) => decodeURIComponent(site)).sort();
    },
    async roles() {
      return (await redis.smembers(rolesKey)).map((role) => decodeURIComponent(role)).sort();
    },
    distinct: (groups) => countDistinct(redis, dayKey, groups),
    async waitingHandoffs() {
      // `at|day|channel|hand-off|team[|ended at]`
      const waits = (await redis.hvals(waitingKey)).map((held) => held.split('|'));
      return new Set(waits.filter((wait) => !wait[5]).map((wait) => wait[3] ?? ''));
    },
    async drop(ids) {
      for (let start = 0; start < ids.length; start += IDS_PER_READ) await collection.deleteMany({ _id: { $in: ids.slice(start, start + IDS_PER_READ) } });
    },
    start(intervalMs) {
      if (timer) return;
      timer = setInterval(() => {
        flush(false).catch((error: unknown) => logger.warn('reports-flush-failed', { error }));
      }, intervalMs);
      timer.unref();
    },
    async close() {
      clearInterval(timer);
      timer = undefined;
      await flush().catch((error: unknown) => logger.warn('reports-flush-failed', { error }));
    },
  };
}
