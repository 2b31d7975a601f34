/**
 * Model usage, metered per turn and summed per day, role, channel and model: one MongoDB
 * document per `day|role|channel|model`, grown with `$inc` by `_id` (the only filter FerretDB
 * 1.x pushes down), so a turn's write is one upsert per model it called and never a scan. It
 * lives outside the orchestrator's Redis state and is written after the reply, so it costs the
 * per-turn budget nothing. The admin API reads a range of days; an optional price table turns
 * tokens into cost.
 */
import { Schema, type Connection, type Model } from 'mongoose';
import type { Config } from '../config.js';

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
  calls: readonly { model: string; inputTokens: number; outputTokens: number }[];
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
  /** Adds one turn's model calls to its day, role and channel. */
  record(entry: UsageEntry): Promise<void>;
  /** Sums per day, role and channel for the UTC days `from`..`to` (inclusive). */
  summary(from: string, to: string, prices?: ModelPrices): Promise<UsageSummary>;
}

export const utcDay = (date: Date): string => date.toISOString().slice(0, 10);

function add(into: UsageTotals, from: UsageTotals, cost: number | undefined): void {
  into.calls += from.calls;
  into.inputTokens += from.inputTokens;
  into.outputTokens += from.outputTokens;
  if (into.cost !== undefined) into.cost = cost === undefined ? undefined : into.cost + cost;
}

const costOf = (totals: UsageTotals, price: ModelPrices[string] | undefined) =>
  price && (totals.inputTokens * price.inputPerMTok + totals.outputTokens * price.outputPerMTok) / 1_000_000;

export function createUsageStore(connection: Connection): UsageStore {
  const usage: Model<UsageRecord> = connection.models.ModelUsage ?? connection.model<UsageRecord>('ModelUsage', usageSchema);
  return {
    async record(entry) {
      const byModel = new Map<string, UsageTotals>();
      for (const call of entry.calls) {
        const totals = byModel.get(call.model) ?? { calls: 0, inputTokens: 0, outputTokens: 0 };
        add(totals, { calls: 1, inputTokens: call.inputTokens, outputTokens: call.outputTokens }, undefined);
        byModel.set(call.model, totals);
      }
      await Promise.all(
        [...byModel].map(([model, totals]) =>
          usage.updateOne({ _id: [entry.day, entry.roleId, entry.channelId, model].join('|') }, { $inc: { ...totals } }, { upsert: true }).exec(),
        ),
      );
    },

    async summary(from, to, prices) {
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
