/**
 * How every worker's index learns of a change: one Redis stream (`asst:knowledge:changes`, one
 * key, capped) of `{ op, owner }` entries. A change is written to MongoDB first, then announced;
 * each process follows the stream on a connection of its own (blocking XREAD) and applies an
 * entry by reading the owner back from MongoDB by `_id`, so applying one twice, or one it
 * already applied itself, changes nothing. A process starts following from the stream's last
 * entry taken before it reads MongoDB, so no change falls between the build and the follow.
 *
 * The stream is a fast path, not the record: MongoDB is. The follower tells its process when it
 * may have missed something — entries trimmed past its position, the stream gone or started
 * over (Redis restarted or lost it), an entry it failed to apply — and the process then
 * re-reads from MongoDB what differs (`index-sync.ts`), as its periodic check does anyway.
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

/** Why a follower may have missed changes. */
export type GapReason = 'trimmed' | 'stream-reset' | 'apply-failed';

const idParts = (id: string) => id.split('-').map((part) => BigInt(part || '0'));
/** Stream ids compared (`<ms>-<seq>`): negative when a is older. */
function compareIds(a: string, b: string): number {
  const [aMs = 0n, aSeq = 0n] = idParts(a);
  const [bMs = 0n, bSeq = 0n] = idParts(b);
  return aMs === bMs ? Number(aSeq - bSeq) : aMs < bMs ? -1 : 1;
}

/**
 * Whether entries after `position` may be lost: the stream is gone, or started over below it
 * (Redis restarted without it), or trimmed past it (its oldest entry is newer than the position,
 * or it is empty though entries were added after it; trimming keeps the newest 10,000, so a
 * follower found behind them was missing some). Returns the reason and where to go on from.
 */
async function findGap(reader: RedisClient, position: string): Promise<{ reason: GapReason; from: string } | undefined> {
  let info: unknown[];
  try {
    info = (await reader.xinfo('STREAM', CHANGES_KEY)) as unknown[];
  } catch (error) {
    if (!/no such key/i.test(error instanceof Error ? error.message : '')) throw error;
    return position === '0-0' ? undefined : { reason: 'stream-reset', from: '0-0' };
  }
  const field = (name: string) => info[info.indexOf(name) + 1];
  const last = String(field('last-generated-id') ?? '0-0');
  if (compareIds(last, position) < 0) return { reason: 'stream-reset', from: '0-0' };
  const first = (field('first-entry') as [string, unknown] | null | undefined)?.[0];
  if (first === undefined) return compareIds(last, position) > 0 ? { reason: 'trimmed', from: last } : undefined;
  if (compareIds(first, position) > 0 && position !== '0-0') return { reason: 'trimmed', from: position };
  return undefined;
}

export function followChanges(
  redis: RedisClient,
  from: string,
  apply: (change: KnowledgeChange) => Promise<void>,
  dependencies: { logger: Logger; metrics: Metrics; onGap: (reason: GapReason) => void },
): ChangeFollower {
  const reader = duplicateRedis(redis);
  let closed = false;
  let position = from;
  const gap = (reason: GapReason) => {
    dependencies.metrics.increment('knowledge_change_gaps_total', { reason });
    dependencies.logger.warn('knowledge-change-gap', { reason, position });
    dependencies.onGap(reason);
  };
  const loop = (async () => {
    while (!closed) {
      try {
        const missed = await findGap(reader, position);
        if (missed) {
          position = missed.from;
          gap(missed.reason);
        }
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
              gap('apply-failed');
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
