/**
 * A person's jobs in BullMQ's queues: every queue under the service's prefix (found by its `meta`
 * key), every job in any state whose id or data names one of the person's conversations,
 * messages or hand-offs — a rating question or an idle hand-back waiting to fire, a held notice,
 * a turn, a failed job kept as a dead letter — read for an export and removed for an erasure
 * (a job a worker holds right now cannot be removed: counted as `active`, and the erasure's
 * second pass takes it once it ended). Removing a job drops its deduplication mark with it.
 */
import { Queue, type ConnectionOptions, type JobType } from 'bullmq';
import { Cluster } from 'ioredis';
import type { RedisClient } from '../redis.js';

const STATES: JobType[] = ['waiting', 'delayed', 'prioritized', 'waiting-children', 'completed', 'failed', 'active'];

async function queueNames(redis: RedisClient, prefix: string): Promise<string[]> {
  const names = new Set<string>();
  const nodes = redis instanceof Cluster ? redis.nodes('master') : [redis];
  const match = `${prefix.replace(/[[\]*?\\]/g, '\\$&')}:*:meta`;
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', match, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) names.add(key.slice(prefix.length + 1, -':meta'.length));
    } while (cursor !== '0');
  }
  return [...names];
}

interface FoundJob {
  queue: string;
  id: string;
  name: string;
  state: string;
  data: unknown;
  remove(): Promise<void>;
}

async function* personJobs(redis: RedisClient, connection: ConnectionOptions, prefix: string, needles: readonly string[]): AsyncGenerator<FoundJob> {
  const mentions = (text: string) => needles.some((needle) => needle.length >= 4 && text.includes(needle));
  for (const name of await queueNames(redis, prefix)) {
    const queue = new Queue(name, { connection, prefix });
    try {
      for (const state of STATES) {
        for (const job of await queue.getJobs([state], 0, -1)) {
          if (!job?.id || !mentions(`${job.id}\n${JSON.stringify(job.data)}\n${job.failedReason ?? ''}`)) continue;
          yield { queue: name, id: job.id, name: job.name, state, data: job.data, remove: () => job.remove() };
        }
      }
    } finally {
      await queue.close();
    }
  }
}

/** The person's jobs, by queue. */
export async function exportQueues(redis: RedisClient, connection: ConnectionOptions, prefix: string, needles: readonly string[]) {
  const found: Record<string, { id: string; name: string; state: string; data: unknown }[]> = {};
  for await (const { queue, id, name, state, data } of personJobs(redis, connection, prefix, needles)) (found[queue] ??= []).push({ id, name, state, data });
  return found;
}

/** Removes the person's jobs; counts by `queue:state` (a job held by a worker is counted `queue:active`, left for the next pass). */
export async function eraseQueues(
  redis: RedisClient,
  connection: ConnectionOptions,
  prefix: string,
  needles: readonly string[],
): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for await (const job of personJobs(redis, connection, prefix, needles)) {
    const key = `${job.queue}:${job.state}`;
    try {
      await job.remove();
      counts[key] = (counts[key] ?? 0) + 1;
    } catch {
      counts[`${job.queue}:active`] = (counts[`${job.queue}:active`] ?? 0) + 1;
    }
  }
  return counts;
}
