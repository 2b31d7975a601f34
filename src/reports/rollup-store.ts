/**
 * Daily roll-ups: one MongoDB document per UTC day and channel (`_id` `2026-12-01|whatsapp`),
 * its `counts` the day's totals. Events are counted in Redis first, one Lua script per batch (the
 * transcript writer's batch: one EVALSHA per batch, not per record), which dedupes by record (a
 * retried batch counts once), keeps the day's sets a figure needs (conversations with a customer
 * message, with a person, not resolved) and the hand-offs waiting for a teammate's first reply.
 * A flush (every `flushIntervalMs`, and before every report) adds what was counted since the
 * last one to MongoDB, exactly once (`rollup-flush.ts`). Redis keeps a day's sets for
 * HORIZON_DAYS after its last record: a record arriving later than that is counted but not
 * deduped (`npm run reports -- rebuild` recounts everything). Reads are by `_id` only: the day ×
 * channel ids of the range, `$in` in batches of 20. */
import type { Connection } from 'mongoose';
import type { Logger } from '../logger.js';
import { KEY_PREFIX, luaScript, type RedisClient } from '../redis.js';
import type { TeamHours } from '../handoff/team-hours.js';
import { openMsBetween } from './open-hours.js';
import { createRollupFlusher } from './rollup-flush.js';
import { addDays, metricPart, RESPONSE_BUCKETS, type RollupEvent } from './rollup-events.js';

export const ROLLUP_COLLECTION = 'report_rollups';
/**
 * Days Redis keeps a day's sets and totals after its last record (late records, flushes): the
 * dedupe ids are most of the roll-up's memory (~90 bytes a message), so a few days, not a month.
 */
export const HORIZON_DAYS = 3;
/** A hand-off waits this long for a teammate's first reply before it is dropped (uncounted). */
const WAIT_DAYS = 8;
const IDS_PER_READ = 20;

export interface RollupDocument {
  _id: string;
  counts: Record<string, number>;
}

/**
 * KEYS[1] totals (hash `day|channel|metric` → n), KEYS[2] hand-offs waiting for a teammate's
 * first reply (hash conversation → `at|day|channel|hand-off|team[|ended at]`), KEYS[3] teammates'
 * messages written while one waited, until the channel takes them (hash message → `at|conversation`),
 * then the day keys the events name by index. ARGV[1] the events (JSON), ARGV[2] the response
 * buckets, ARGV[3] the day keys' TTL (s). Returns the first replies it counted
 * (`day|channel|teammate|team|start|reply`), for their wait within the team's hours and per team and teammate.
 */
const countScript = luaScript(`
local totals, waiting, replies = KEYS[1], KEYS[2], KEYS[3]
local events = cjson.decode(ARGV[1])
local bounds = cjson.decode(ARGV[2])
local touched = {}
local counted = {}
local anyReply = redis.call('HLEN', replies) > 0
local function key(i) touched[i] = true return KEYS[i] end
local function inc(field, n) if n ~= 0 then redis.call('HINCRBY', totals, field, n) end end
local function unresolved(u, f, conv) if redis.call('SADD', key(u), conv) == 1 then inc(f .. 'unres', 1) end end
local function person(e)
  if redis.call('SADD', key(e.p), e.v) == 1 and redis.call('SISMEMBER', key(e.a), e.v) == 1 then unresolved(e.u, e.f, e.v) end
end
local function split(text)
  local parts = {}
  for part in string.gmatch(text .. '|', '([^|]*)|') do parts[#parts + 1] = part end
  return parts
end
-- A teammate's (who) message to conv written at t reached the customer: the first one ends the wait.
local function replied(conv, t, who)
  local held = redis.call('HGET', waiting, conv)
  if not held then return end
  local w = split(held)
  local ended = tonumber(w[6] or '')
  if ended and t > ended then
    redis.call('HDEL', waiting, conv)
    return
  end
  local seconds = (t - tonumber(w[1])) / 1000
  if seconds < 0 then return end
  local from = w[2] .. '|' .. w[3] .. '|'
  local bucket = #bounds
  for b = 1, #bounds do
    if seconds <= bounds[b] then
      bucket = b - 1
      break
    end
  end
  inc(from .. 'frt:' .. bucket, 1)
  inc(from .. 'frt_n', 1)
  redis.call('HDEL', waiting, conv)
  -- The caller counts the wait within the team's hours: hand-off day|channel|, team, start, reply.
  counted[#counted + 1] = from .. (who or '') .. '|' .. (w[5] or '') .. '|' .. w[1] .. '|' .. t
end
for _, e in ipairs(events) do
  local fresh = e.i == '' or redis.call('SADD', key(e.s), e.i) == 1
  if fresh then
    local f = e.f
    if e.k == 'in' then
      inc(f .. 'in', 1)
      if redis.call('SADD', key(e.a), e.v) == 1 then
        inc(f .. 'conv', 1)
        if redis.call('SISMEMBER', key(e.p), e.v) == 1 or redis.call('SISMEMBER', key(e.an), e.v) == 1 then unresolved(e.u, f, e.v) end
        if redis.call('SISMEMBER', key(e.ap), e.v) == 1 then unresolved(e.up, e.fp, e.v) end
      end
    elseif e.k == 'out' then
      inc(f .. 'out', 1)
      if e.tm then
        person(e)
        if redis.call('HEXISTS', waiting, e.v) == 1 then
          redis.call('HSET', replies, e.m, e.t .. '|' .. e.v .. '|' .. (e.w or ''))
          anyReply = true
        end
      end
    elseif e.k == 'delivered' then
      if anyReply then
        local held = redis.call('HGET', replies, e.m)
        if held then
          redis.call('HDEL', replies, e.m)
          local r = split(held)
          replied(r[2], tonumber(r[1]), r[3])
        end
      end
    elseif e.k == 'handoff' then
      inc(f .. 'ho', 1)
      inc(f .. 'ho_team:' .. e.team, 1)
      inc(f .. 'ho_role:' .. e.role, 1)
      person(e)
      -- The newest hand-off's wait: an earlier one still waiting was ended or never answered.
      redis.call('HSET', waiting, e.v, e.t .. '|' .. f .. e.h .. '|' .. e.team)
    elseif e.k == 'handoff_end' then
      local held = redis.call('HGET', waiting, e.v)
      if held then
        local w = split(held)
        if w[4] == e.h and not w[6] then redis.call('HSET', waiting, e.v, held .. '|' .. e.t) end
      end
    elseif e.k == 'action' then
      inc(f .. 'act_' .. e.o, 1)
    elseif e.k == 'miss' then
      inc(f .. 'miss', e.n)
    elseif e.k == 'resolved' then
      inc(f .. 'res:' .. e.b, 1)
    elseif e.k == 'usage' then
      inc(f .. 'calls', e.n)
      inc(f .. 'tok_in:' .. e.m, e.ti)
      inc(f .. 'tok_out:' .. e.m, e.to)
    end
  end
end
for i in pairs(touched) do redis.call('EXPIRE', KEYS[i], ARGV[3]) end
return counted`);

export interface RollupStore {
  /** Counts events (one Redis script; each deduped by its id). */
  count(events: readonly RollupEvent[]): Promise<void>;
  /** Adds Redis's totals to MongoDB (`rollup-flush.ts`); one flush at a time in the fleet (a report waits a little for one in progress). */
  flush(): Promise<void>;
  /** Runs `work` holding the fleet's flush lock (no other flush meanwhile); its `flush` flushes under it. */
  exclusive<T>(work: (flush: () => Promise<void>) => Promise<T>): Promise<T>;
  /** The hand-offs whose first reply is still awaited (not answered, not ended, at most WAIT_DAYS old): one HVALS. */
  waitingHandoffs(): Promise<Set<string>>;
  /** The roll-up documents of these ids that exist (reads of ≤ 20 ids each). */
  read(ids: readonly string[]): Promise<RollupDocument[]>;
  /**
   * Removes Redis's totals, the waits and the day sets of `days` (the rebuild's first step);
   * with `daySetsOnly`, only those day sets (and with `keepSeen`, not the days' dedupe ids).
   */
  reset(days: Iterable<string>, channels: readonly string[], options?: { daySetsOnly?: boolean; keepSeen?: boolean }): Promise<void>;
  /** Deletes these roll-up documents (by `_id`, 20 at a time). */
  drop(ids: readonly string[]): Promise<void>;
  start(intervalMs: number): void;
  close(): Promise<void>;
}

/**
 * The events as the count script reads them, and its keys: the fixed ones first, then each day
 * set an event names, once, referred to by its index.
 */
function encodeEvents(
  events: readonly RollupEvent[],
  fixed: readonly string[],
  dayKey: (set: string, day: string, channel?: string) => string,
): { keys: string[]; encoded: unknown[] } {
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
  const encoded = events.map((event) => {
    const { day, channel } = event;
    const base = { i: event.id, k: event.kind, f: `${day}|${channel}|`, ...(event.id ? { s: at(dayKey('seen', day)) } : {}) };
    switch (event.kind) {
      case 'in': {
        const previous = addDays(day, -1);
        return {
          ...base,
          v: event.conversation,
          a: at(dayKey('active', day, channel)),
          p: at(dayKey('person', day, channel)),
          u: at(dayKey('unres', day, channel)),
          an: at(dayKey('active', addDays(day, 1), channel)),
          ap: at(dayKey('active', previous, channel)),
          up: at(dayKey('unres', previous, channel)),
          fp: `${previous}|${channel}|`,
        };
      }
      case 'out':
      case 'handoff': {
        const sets = {
          v: event.conversation,
          t: event.at,
          a: at(dayKey('active', day, channel)),
          p: at(dayKey('person', day, channel)),
          u: at(dayKey('unres', day, channel)),
        };
        if (event.kind === 'out')
          return event.teammate ? { ...base, ...sets, tm: true, m: event.message, w: metricPart(event.author ?? '') } : { ...base, tm: false };
        return { ...base, ...sets, team: metricPart(event.team), role: metricPart(event.role), h: event.handoff };
      }
      case 'delivered':
        return { ...base, m: event.message };
      case 'handoff_end':
        return { ...base, v: event.conversation, h: event.handoff, t: event.at };
      case 'action':
        return { ...base, o: event.outcome };
      case 'miss':
        return { ...base, n: event.count ?? 1 };
      case 'resolved': {
        const bucket = RESPONSE_BUCKETS.findIndex((bound) => event.seconds <= bound);
        return { ...base, b: bucket === -1 ? RESPONSE_BUCKETS.length : bucket };
      }
      case 'usage':
        return { ...base, m: metricPart(event.model), n: event.calls, ti: event.inputTokens, to: event.outputTokens };
    }
  });
  return { keys, encoded };
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
  const dayKey = (set: string, day: string, channel?: string) => `${prefix}:${set}:${day}${channel === undefined ? '' : `|${channel}`}`;
  const flusher = createRollupFlusher(connection, redis, { totals: totalsKey, prefix });
  /**
   * First replies' waits within the team's hours (`frth:` buckets), and both waits per team and per teammate
   * (`frt_team:`, `frth_team:`, `frt_tm:`, `frth_tm:` `<name>:<bucket>`): a second command, only for a batch that answered a hand-off.
   */
  const countOpenHours = async (counted: readonly string[]) => {
    const pipeline = redis.pipeline();
    const bucketOf = (seconds: number) => {
      const bucket = RESPONSE_BUCKETS.findIndex((bound) => seconds <= bound);
      return bucket === -1 ? RESPONSE_BUCKETS.length : bucket;
    };
    for (const reply of counted) {
      const [day = '', channel = '', teammate = '', team = '', start = '', at = ''] = reply.split('|');
      const open = bucketOf(openMsBetween(teamHours(decodeURIComponent(team)), Number(start), Number(at)) / 1000);
      const elapsed = bucketOf((Number(at) - Number(start)) / 1000);
      const f = `${day}|${channel}|`;
      pipeline.hincrby(totalsKey, `${f}frth:${open}`, 1);
      pipeline.hincrby(totalsKey, `${f}frth_n`, 1);
      pipeline.hincrby(totalsKey, `${f}frt_team:${team}:${elapsed}`, 1);
      pipeline.hincrby(totalsKey, `${f}frth_team:${team}:${open}`, 1);
      if (teammate) {
        pipeline.hincrby(totalsKey, `${f}frt_tm:${teammate}:${elapsed}`, 1);
        pipeline.hincrby(totalsKey, `${f}frth_tm:${teammate}:${open}`, 1);
      }
    }
    await pipeline.exec();
  };
  let flushing: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;

  const count = async (events: readonly RollupEvent[]) => {
    if (events.length === 0) return;
    const { keys, encoded } = encodeEvents(events, [totalsKey, waitingKey, repliesKey], dayKey);
    const counted = (await countScript(redis, keys, [JSON.stringify(encoded), JSON.stringify(RESPONSE_BUCKETS), HORIZON_DAYS * 86_400])) as string[];
    if (counted.length > 0) await countOpenHours(counted);
  };

  /** Adds the totals to MongoDB (`rollup-flush.ts`), then drops waits nobody will answer. */
  const flushOnce = async (wait: boolean) => {
    if (!(await flusher.flush(wait))) return;
    await prune();
  };

  const prune = async () => {
    const waits = await redis.hgetall(waitingKey);
    const waitedTooLong = addDays(new Date().toISOString().slice(0, 10), -WAIT_DAYS);
    const stale = Object.entries(waits).filter(([, held]) => (held.split('|')[1] ?? '') < waitedTooLong);
    if (stale.length > 0) await redis.hdel(waitingKey, ...stale.map(([conversation]) => conversation));
    // A teammate's message the channel never took (refused, or its record lost) waits no longer than a hand-off.
    const unsent = await redis.hgetall(repliesKey);
    const cutoff = Date.parse(`${waitedTooLong}T00:00:00Z`);
    const lost = Object.entries(unsent).filter(([, held]) => Number(held.split('|')[0]) < cutoff);
    if (lost.length > 0) await redis.hdel(repliesKey, ...lost.map(([message]) => message));
  };

  const flush = (wait = true) => {
    flushing = flushing.catch(() => undefined).then(() => flushOnce(wait));
    return flushing;
  };

  return {
    count,
    flush: () => flush(true),
    exclusive: (work) =>
      flusher.exclusive(async (flushHeld) =>
        work(async () => {
          await flushHeld();
          await prune();
        }),
      ),
    async waitingHandoffs() {
      // `at|day|channel|hand-off|team[|ended at]`
      const waits = (await redis.hvals(waitingKey)).map((held) => held.split('|'));
      return new Set(waits.filter((wait) => !wait[5]).map((wait) => wait[3] ?? ''));
    },
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
