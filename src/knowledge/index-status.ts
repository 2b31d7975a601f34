/**
 * Every process's index status in one Redis hash: what a process's last check saw (its index's
 * version and the store's, compared), published by that check and read for
 * `GET /admin/knowledge` → `workers`; a status gone quiet is a process that is gone, dropped.
 */
import { z } from 'zod';
import { KEY_PREFIX, type RedisClient } from '../redis.js';

const STATUS_KEY = `${KEY_PREFIX}:knowledge:index-status`;
/** A process's published status older than this many checks is a process that is gone. */
const STALE_CHECKS = 5;

/** One process's index as its last check saw it: its version and the store's, compared. */
const WorkerIndexStatusSchema = z.object({
  process: z.string(),
  chunks: z.number(),
  owners: z.number(),
  version: z.string(),
  storeVersion: z.string(),
  inSync: z.boolean(),
  checkedAt: z.string(),
});
export type WorkerIndexStatus = z.infer<typeof WorkerIndexStatusSchema>;

const parseStatus = (value: string): WorkerIndexStatus | undefined => {
  try {
    return WorkerIndexStatusSchema.parse(JSON.parse(value));
  } catch {
    return undefined;
  }
};

export function createIndexStatuses(redis: RedisClient, everyMs: number) {
  return {
    async publish(status: WorkerIndexStatus): Promise<void> {
      await redis.hset(STATUS_KEY, status.process, JSON.stringify(status));
    },

    /** Every process's last published status; those gone quiet are dropped. */
    async workers(): Promise<WorkerIndexStatus[]> {
      const entries = await redis.hgetall(STATUS_KEY);
      const oldest = Date.now() - Math.max(STALE_CHECKS * everyMs, 60_000);
      const out: WorkerIndexStatus[] = [];
      for (const [field, value] of Object.entries(entries)) {
        const status = parseStatus(value);
        if (!status || Date.parse(status.checkedAt) < oldest) await redis.hdel(STATUS_KEY, field);
        else out.push(status);
      }
      return out.sort((a, b) => a.process.localeCompare(b.process));
    },

    async forget(processId: string): Promise<void> {
      await redis.hdel(STATUS_KEY, processId).catch(() => undefined);
    },
  };
}
