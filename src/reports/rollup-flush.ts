/**
 * Writing the roll-ups' Redis totals to MongoDB as increments, each exactly once. Redis's totals
 * hash holds only what was counted since the last flush: a flush first moves it aside under a
 * flush id (one script: RENAME to the snapshot; a snapshot left by a flush that failed is taken
 * again with its id), then adds it to the day documents (`$inc` by `_id`, at most 20 per command)
 * marking each with the flush id — a document already marked (a retried flush) is not matched, so
 * its upsert is refused as a duplicate and nothing is added twice — then deletes the snapshot.
 * Losing Redis's totals therefore loses only what was counted since the last flush (a minute),
 * never a day's figure, and a record counted late for an old day adds to it. One flush at a time
 * in the fleet (a Redis lock, renewed while held); a rebuild holds it throughout (`exclusive`).
 */
import { randomUUID } from 'node:crypto';
import type { Connection } from 'mongoose';
import { isDuplicateKeyError } from '../errors/index.js';
import { luaScript, type RedisClient } from '../redis.js';
import { rollupId } from './rollup-events.js';

const STATEMENTS_PER_COMMAND = 20;
const LOCK_MS = 60_000;
/** A report waits this long at most for another process's flush to finish (then reads what is written). */
const WAIT_TRIES = 50;
const WAIT_STEP_MS = 100;

// KEYS: totals, snapshot, snapshot's id. ARGV: a new id. Returns {id, field, value, …}, or {} when there is nothing.
const takeScript = luaScript(`
if redis.call('EXISTS', KEYS[2]) == 0 then
  if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
  redis.call('RENAME', KEYS[1], KEYS[2])
  redis.call('SET', KEYS[3], ARGV[1])
end
local id = redis.call('GET', KEYS[3]) or ARGV[1]
local taken = redis.call('HGETALL', KEYS[2])
table.insert(taken, 1, id)
return taken`);

// KEYS: snapshot, snapshot's id. ARGV: the id written. Deletes the snapshot if it is still that one.
const doneScript = luaScript(`
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[1], KEYS[2]) end
return 1`);

// KEYS: the lock. ARGV: the holder's token, a TTL (ms). Renews or frees only the holder's own lock.
const renewScript = luaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`);
const releaseScript = luaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`);

export interface RollupFlusher {
  /** Adds Redis's totals to MongoDB; false when another process is flushing (`wait`: after waiting a little for it). */
  flush(wait: boolean): Promise<boolean>;
  /** Runs `work` holding the flush lock (waiting for a flush in progress); `flush` inside it flushes under that lock. */
  exclusive<T>(work: (flush: () => Promise<void>) => Promise<T>): Promise<T>;
}

export function createRollupFlusher(connection: Connection, redis: RedisClient, keys: { totals: string; prefix: string }): RollupFlusher {
  const collection = connection.collection<{ _id: string; counts: Record<string, number>; flush?: string }>('report_rollups');
  const snapshotKey = `${keys.prefix}:flushing`;
  const snapshotIdKey = `${keys.prefix}:flushing-id`;
  const lockKey = `${keys.prefix}:flush-lock`;

  const lock = async (token: string) => (await redis.set(lockKey, token, 'PX', LOCK_MS, 'NX')) === 'OK';
  const waitForLock = async (token: string) => {
    for (let tries = 0; tries < WAIT_TRIES; tries += 1) {
      if (await lock(token)) return true;
      await new Promise((resolve) => setTimeout(resolve, WAIT_STEP_MS));
    }
    return false;
  };
  const release = (token: string) => releaseScript(redis, [lockKey], [token]);

  /** The flush itself, under a lock the caller holds. */
  const apply = async () => {
    const taken = (await takeScript(redis, [keys.totals, snapshotKey, snapshotIdKey], [randomUUID()])) as string[];
    const [id, ...pairs] = taken;
    if (!id) return;
    const documents = new Map<string, Record<string, number>>();
    for (let index = 0; index + 1 < pairs.length; index += 2) {
      const [day = '', channel = '', metric = ''] = (pairs[index] ?? '').split('|');
      const counts = documents.get(rollupId(day, channel)) ?? {};
      counts[`counts.${metric}`] = Number(pairs[index + 1]);
      documents.set(rollupId(day, channel), counts);
    }
    const entries = [...documents];
    for (let start = 0; start < entries.length; start += STATEMENTS_PER_COMMAND) {
      const slice = entries.slice(start, start + STATEMENTS_PER_COMMAND);
      try {
        await collection.bulkWrite(
          slice.map(([_id, increments]) => ({
            updateOne: { filter: { _id, flush: { $ne: id } }, update: { $inc: increments, $set: { flush: id } }, upsert: true },
          })),
          { ordered: false },
        );
      } catch (error) {
        // A document this flush already added to (a retry): its upsert is refused as a duplicate. Anything else is a failure.
        if (!isDuplicateKeyError(error)) throw error;
      }
    }
    await doneScript(redis, [snapshotKey, snapshotIdKey], [id]);
  };

  return {
    async flush(wait) {
      const token = randomUUID();
      if (!(wait ? await waitForLock(token) : await lock(token))) return false;
      try {
        await apply();
        return true;
      } finally {
        await release(token);
      }
    },
    async exclusive(work) {
      const token = randomUUID();
      while (!(await waitForLock(token))) {
        // Another holder (a rebuild) keeps it: keep waiting, as a second rebuild must.
      }
      const renew = setInterval(() => void renewScript(redis, [lockKey], [token, LOCK_MS]).catch(() => undefined), LOCK_MS / 4);
      renew.unref();
      try {
        return await work(apply);
      } finally {
        clearInterval(renew);
        await release(token);
      }
    },
  };
}
