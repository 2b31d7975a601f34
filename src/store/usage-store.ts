/**
 * Model usage, metered per turn and summed per day, role, channel and model, with no MongoDB
 * write on the turn's path. A turn adds one entry to a Redis list (one RPUSH, after the reply;
 * outside the orchestrator's state, so it costs the per-turn budget nothing). A flush — every
 * USAGE_FLUSH_INTERVAL_MS in each worker, and before every `/admin/usage` read — first folds the
 * list into a Redis hash of the day's absolute totals (one Lua script: the entries it folds are
 * removed in the same step, so each is counted exactly once, whoever flushes), then writes those
 * totals to MongoDB with `$max` by `_id` (`day|role|channel|model`, the only filter FerretDB 1.x
 * pushes down). Writing absolute totals makes a repeated or concurrent flush — a crash, a
 * restart, two workers — harmless: MongoDB never counts twice and never goes back. The day's
 * totals stay in Redis until the day after next (they must: a later total is written whole).
 * Redis is expected to persist (AOF); a Redis that loses them undercounts, never overcounts.
 * The admin API reads a range of days; an optional price table turns tokens into cost. A turn
 * whose knowledge had no answer carries the miss in its entry (its time, and its question as a
 * JSON line): the fold hands both to `onFold` (the reports count it, the knowledge lists it), taken
 * once with the entry, no Redis command of its own. `fold` alone (no MongoDB write) is for the
 * misses list's readers, who fold first to be exact.
 */
import type { RedisClient } from '../redis.js';
import { Schema, type Connection, type Model } from 'mongoose';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { KEY_PREFIX, luaScript } from '../redis.js';

/** Model id → price in the operator's currency per million input and output tokens. */
type ModelPrices = NonNullable<Config['model']['prices']>;

interface UsageRecord {
  /** `YYYY-MM-DD|<role>|<channel>|<model>` (UTC day). */
  _id: string;
  calls: number;
  inputTokens: number;
  outputTokens: number;
}

const usageSchema = new Schema<UsageRecord>(
  { _id: { type: String, required: true }, calls: Number, inputTokens: Number, outputTokens: Number },
  { versionKey: false, collection: 'model_usage' },
);

interface UsageEntry {
  /** The UTC day the turn ran, `YYYY-MM-DD`. */
  day: string;
  roleId: string;
  channelId: string;
  calls: readonly { model: string; inputTokens: number; outputTokens: number; requests?: number }[];
  /** The turn's knowledge had no answer (`at`: ISO time): the question, listed and counted with the fold, not on its own. */
  miss?: UsageMissNote;
}

/** A turn's knowledge miss as the misses list has it (its role, question, search terms, site and channel). */
interface UsageMissNote {
  at: string;
  role: string;
  question: string;
  terms?: string | undefined;
  site?: string | undefined;
  channel: string;
}

interface UsageTotals {
  calls: number;
  inputTokens: number;
  outputTokens: number;
  /** Only when every model in the sum has a price. */
  cost?: number;
}

interface UsageRow extends UsageTotals {
  day: string;
  roleId: string;
  channelId: string;
  models: (UsageTotals & { model: string })[];
}

interface UsageSummary {
  from: string;
  to: string;
  rows: UsageRow[];
  total: UsageTotals;
}

export interface UsageStore {
  /** Adds one turn's model calls (and its knowledge miss) to its day, role and channel (one Redis command). */
  record(entry: UsageEntry): Promise<void>;
  /** Folds what turns recorded into the day's totals and writes the totals to MongoDB. */
  flush(): Promise<void>;
  /** Folds what turns recorded into the day's totals (their misses to `onFold`), without the MongoDB write. */
  fold(): Promise<void>;
  /** Flushes, then sums per day, role and channel for the UTC days `from`..`to` (inclusive). */
  summary(from: string, to: string, prices?: ModelPrices): Promise<UsageSummary>;
  /** Flushes every `flushIntervalMs` in this process until closed. */
  start(): void;
  /** Stops the timer and flushes once more. */
  close(): Promise<void>;
}

/** What a fold added: one day, role, channel and model's calls and tokens. */
export interface UsageFolded {
  day: string;
  roleId: string;
  channelId: string;
  model: string;
  calls: number;
  inputTokens: number;
  outputTokens: number;
}

/** A knowledge miss a fold took, as its turn's entry carried it. */
export interface UsageMiss {
  channelId: string;
  /** ISO time of the miss. */
  at: string;
}

interface UsageStoreOptions {
  flushIntervalMs: number;
  logger: Logger;
  /**
   * Told what each fold took (the reports' roll-ups count model use and knowledge misses from it,
   * the knowledge lists the misses' questions, `notes`, JSON lines: not per turn); never throws.
   */
  onFold?: (folded: readonly UsageFolded[], misses: readonly UsageMiss[], notes: readonly string[]) => Promise<void>;
}

/** Entries folded per script call: bounds how long Redis is busy with one. */
const FOLD_BATCH = 100;

/**
 * KEYS[1] the list of turn entries (JSON `{d, r, c, m: [[model, in, out], …], k?, q?}`), KEYS[2] the hash
 * of totals (`day|role|channel|model|calls|in|out` → count). Folds up to ARGV[1] entries and
 * removes them in the same step; an entry that is not what a turn writes is dropped. The batch is
 * summed in the script first, so a batch costs one HINCRBY per distinct total (a handful), not
 * three per model call (600 per batch, which held Redis for milliseconds). Returns the number of
 * entries folded, then each total's field and what it added, then `miss|<time>|<channel>`, 1 for
 * each entry's knowledge miss (`k`: taken with its entry, so counted once, like the model use),
 * then `note`, the miss's question the entry carries as a JSON line (`q`; an entry of the previous
 * version has none: its miss was listed at its turn).
 */
const foldScript = luaScript(`
local entries = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
local sums, order, misses = {}, {}, {}
local function add(field, amount)
  if sums[field] == nil then
    sums[field] = 0
    order[#order + 1] = field
  end
  sums[field] = sums[field] + amount
end
for _, raw in ipairs(entries) do
  local ok, entry = pcall(cjson.decode, raw)
  if ok and type(entry) == 'table' and type(entry.k) == 'string' then
    misses[#misses + 1] = 'miss|' .. entry.k .. '|' .. tostring(entry.c)
    misses[#misses + 1] = 1
    if type(entry.q) == 'string' then
      misses[#misses + 1] = 'note'
      misses[#misses + 1] = entry.q
    end
  end
  if ok and type(entry) == 'table' and type(entry.m) == 'table' then
    for _, call in ipairs(entry.m) do
      if type(call) == 'table' then
        local base = table.concat({ tostring(entry.d), tostring(entry.r), tostring(entry.c), tostring(call[1]) }, '|') .. '|'
        add(base .. 'calls', math.floor(tonumber(call[4]) or 1))
        add(base .. 'in', math.floor(tonumber(call[2]) or 0))
        add(base .. 'out', math.floor(tonumber(call[3]) or 0))
      end
    end
  end
end
local added = { #entries }
for _, field in ipairs(order) do
  redis.call('HINCRBY', KEYS[2], field, sums[field])
  added[#added + 1] = field
  added[#added + 1] = sums[field]
end
for _, item in ipairs(misses) do added[#added + 1] = item end
redis.call('LTRIM', KEYS[1], #entries, -1)
return added`);

/** A fold's additions (`day|role|channel|model|calls|in|out` → n) by day, role, channel and model, its misses and their lines. */
function foldedOf(pairs: readonly (string | number)[]): { folded: UsageFolded[]; misses: UsageMiss[]; notes: string[] } {
  const folded = new Map<string, UsageFolded>();
  const misses: UsageMiss[] = [];
  const notes: string[] = [];
  for (let index = 0; index + 1 < pairs.length; index += 2) {
    const field = String(pairs[index]);
    if (field === 'note') {
      notes.push(String(pairs[index + 1]));
      continue;
    }
    if (field.startsWith('miss|')) {
      const [, at = '', ...channel] = field.split('|');
      misses.push({ at, channelId: channel.join('|') });
      continue;
    }
    const cut = field.lastIndexOf('|');
    const id = field.slice(0, cut);
    const [day = '', roleId = '', channelId = '', ...model] = id.split('|');
    const entry = folded.get(id) ?? { day, roleId, channelId, model: model.join('|'), calls: 0, inputTokens: 0, outputTokens: 0 };
    const amount = Number(pairs[index + 1]);
    const kind = field.slice(cut + 1);
    if (kind === 'calls') entry.calls += amount;
    else if (kind === 'in') entry.inputTokens += amount;
    else if (kind === 'out') entry.outputTokens += amount;
    folded.set(id, entry);
  }
  return { folded: [...folded.values()], misses, notes };
}

const DAY_MS = 86_400_000;

export const utcDay = (date: Date): string => date.toISOString().slice(0, 10);

function add(into: UsageTotals, from: UsageTotals, cost: number | undefined): void {
  into.calls += from.calls;
  into.inputTokens += from.inputTokens;
  into.outputTokens += from.outputTokens;
  if (into.cost !== undefined) into.cost = cost === undefined ? undefined : into.cost + cost;
}

const costOf = (totals: UsageTotals, price: ModelPrices[string] | undefined) =>
  price && (totals.inputTokens * price.inputPerMTok + totals.outputTokens * price.outputPerMTok) / 1_000_000;

export function createUsageStore(connection: Connection, redis: RedisClient, options: UsageStoreOptions): UsageStore {
  const usage: Model<UsageRecord> = connection.models.ModelUsage ?? connection.model<UsageRecord>('ModelUsage', usageSchema);
  // One namespace per database the totals are written to (tests share a RedisClient, not a database).
  const tag = `{usage:${connection.name}}`;
  const pendingKey = `${KEY_PREFIX}:${tag}:pending`;
  const totalsKey = `${KEY_PREFIX}:${tag}:totals`;
  /** What this process last wrote per document, so an unchanged total is not written again. */
  const written = new Map<string, string>();
  let flushing: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;

  /** Folds the pending entries, FOLD_BATCH at a time (each taken by one fold only, whoever runs it). */
  const fold = async () => {
    for (;;) {
      const [count, ...pairs] = (await foldScript(redis, [pendingKey, totalsKey], [FOLD_BATCH])) as (string | number)[];
      if (pairs.length > 0) {
        const { folded, misses, notes } = foldedOf(pairs);
        await options.onFold?.(folded, misses, notes);
      }
      if (Number(count) !== FOLD_BATCH) break;
    }
  };

  const flushOnce = async () => {
    await fold();
    const fields = await redis.hgetall(totalsKey);
    const totals = new Map<string, UsageTotals>();
    for (const [field, count] of Object.entries(fields)) {
      const cut = field.lastIndexOf('|');
      const id = field.slice(0, cut);
      const kind = field.slice(cut + 1);
      const entry = totals.get(id) ?? { calls: 0, inputTokens: 0, outputTokens: 0 };
      if (kind === 'calls') entry.calls = Number(count);
      else if (kind === 'in') entry.inputTokens = Number(count);
      else if (kind === 'out') entry.outputTokens = Number(count);
      totals.set(id, entry);
    }
    const changed = [...totals].filter(([id, entry]) => written.get(id) !== JSON.stringify(entry));
    if (changed.length > 0) {
      await usage.bulkWrite(
        changed.map(([_id, entry]) => ({ updateOne: { filter: { _id }, update: { $max: { ...entry } }, upsert: true } })),
        { ordered: false },
      );
      for (const [id, entry] of changed) written.set(id, JSON.stringify(entry));
    }
    // Written days before yesterday take no more turns: their totals leave Redis.
    const oldest = utcDay(new Date(Date.now() - DAY_MS));
    const done = Object.keys(fields).filter((field) => field.slice(0, 10) < oldest);
    if (done.length > 0) await redis.hdel(totalsKey, ...done);
  };

  /** Flushes after any flush already running (one at a time per process). */
  const flush = () => {
    flushing = flushing.catch(() => undefined).then(flushOnce);
    return flushing;
  };

  return {
    async record(entry) {
      // A call's requests of the model (a tool call and its follow-up are two); one unless said.
      const calls = entry.calls.map((call) => [call.model, call.inputTokens, call.outputTokens, call.requests ?? 1]);
      if (calls.length === 0 && !entry.miss) return;
      const miss = entry.miss ? { k: entry.miss.at, q: JSON.stringify(entry.miss) } : {};
      await redis.rpush(pendingKey, JSON.stringify({ d: entry.day, r: entry.roleId, c: entry.channelId, m: calls, ...miss }));
    },

    flush,
    fold,

    start() {
      if (timer) return;
      timer = setInterval(() => {
        flush().catch((error: unknown) => options.logger.warn('usage-flush-failed', { error }));
      }, options.flushIntervalMs);
      timer.unref();
    },

    async close() {
      clearInterval(timer);
      timer = undefined;
      await flush().catch((error: unknown) => options.logger.warn('usage-flush-failed', { error }));
    },

    async summary(from, to, prices) {
      // What turns recorded since the last flush is in the report: flushed first.
      await flush().catch((error: unknown) => options.logger.warn('usage-flush-failed', { error }));
      const found = await usage
        .find({ _id: { $gte: `${from}|`, $lte: `${to}|\uffff` } })
        .lean()
        .exec();
      const rows = new Map<string, UsageRow>();
      const total: UsageTotals = { calls: 0, inputTokens: 0, outputTokens: 0, ...(prices ? { cost: 0 } : {}) };
      for (const record of found.sort((a, b) => a._id.localeCompare(b._id))) {
        const [day = '', roleId = '', channelId = '', ...model] = record._id.split('|');
        const totals = { calls: record.calls, inputTokens: record.inputTokens, outputTokens: record.outputTokens };
        const cost = prices ? costOf(totals, prices[model.join('|')]) : undefined;
        const key = [day, roleId, channelId].join('|');
        const row = rows.get(key) ?? { day, roleId, channelId, calls: 0, inputTokens: 0, outputTokens: 0, ...(prices ? { cost: 0 } : {}), models: [] };
        add(row, totals, cost);
        row.models.push({ model: model.join('|'), ...totals, ...(cost !== undefined ? { cost } : {}) });
        rows.set(key, row);
        add(total, totals, cost);
      }
      const strip = <T extends UsageTotals>(totals: T): T => {
        if (totals.cost === undefined) delete totals.cost;
        return totals;
      };
      return { from, to, rows: [...rows.values()].map(strip), total: strip(total) };
    },
  };
}
