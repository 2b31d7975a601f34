/**
 * How every worker's index learns of a change: one Redis stream (`asst:knowledge:changes`, one
 * key, capped) of `{ op, owner }` entries. A change is written to MongoDB first, then announced;
 * each process follows the stream on a connection of its own (blocking XREAD) and applies an
 * entry by reading the owner back from MongoDB by `_id`, so applying one twice, or one it
 * already applied itself, changes nothing. A process starts following from the stream's last
 * entry taken before it reads MongoDB, so no change falls between the build and the follow.
 */
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { duplicateRedis, KEY_PREFIX, type RedisClient } from '../redis.js';

const CHANGES_KEY = `${KEY_PREFIX}:knowledge:changes`;
const MAX_ENTRIES = 10_000;
const BLOCK_MS = 2_000;

export interface KnowledgeChange {
  op: 'upsert' | 'delete';
  owner: string;
}

export async function announceChange(redis: RedisClient, change: KnowledgeChange): Promise<void> {
  await redis.xadd(CHANGES_KEY, 'MAXLEN', '~', MAX_ENTRIES, '*', 'op', change.op, 'owner', change.owner);
}

/** The id to follow from: the stream's newest entry now (`0-0` when it is empty). */
export async function streamPosition(redis: RedisClient): Promise<string> {
  const last = (await redis.xrevrange(CHANGES_KEY, '+', '-', 'COUNT', 1)) as [string, string[]][];
  return last[0]?.[0] ?? '0-0';
}

export interface ChangeFollower {
  close(): Promise<void>;
}

export function followChanges(
  redis: RedisClient,
  from: string,
  apply: (change: KnowledgeChange) => Promise<void>,
  dependencies: { logger: Logger; metrics: Metrics },
): ChangeFollower {
  const reader = duplicateRedis(redis);
  let closed = false;
  let position = from;
  const loop = (async () => {
    while (!closed) {
      try {
        const batch = (await reader.xread('COUNT', 100, 'BLOCK', BLOCK_MS, 'STREAMS', CHANGES_KEY, position)) as [string, [string, string[]][]][] | null;
        for (const [, entries] of batch ?? []) {
          for (const [id, fields] of entries) {
            position = id;
            const value = (name: string) => fields[fields.indexOf(name) + 1];
            const op = value('op');
            const owner = value('owner');
            if ((op !== 'upsert' && op !== 'delete') || !owner) continue;
            await apply({ op, owner }).catch((error: unknown) => {
              dependencies.metrics.increment('knowledge_change_failed_total');
              dependencies.logger.error('knowledge-change-failed', { owner, op, error });
            });
          }
        }
      } catch (error) {
        if (closed) break;
        dependencies.logger.warn('knowledge-follow-failed', { error });
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    }
  })();
  return {
    async close() {
      closed = true;
      reader.disconnect();
      await loop;
    },
  };
}
