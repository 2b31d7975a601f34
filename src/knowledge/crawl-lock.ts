/**
 * Who may work on a source: one crawl of it at a time across processes (a Redis lock per source,
 * its token the crawl's), and a removal that wins over a running crawl. Removing a source marks
 * the running crawl's token stopped (the crawl checks before each page and at its end, then takes
 * back what it wrote), waits for the lock, and removes the source while holding it, so no crawl
 * writes the source back after it is gone.
 */
import { KEY_PREFIX, type RedisClient } from '../redis.js';
import { releaseLease } from '../redis-lease.js';
import { newId } from './library.js';

const CRAWL_LOCK_MS = 30 * 60_000;
const POLL_MS = 100;

const lockKey = (sourceId: string) => `${KEY_PREFIX}:knowledge:crawl:${sourceId}`;
const stopKey = (sourceId: string) => `${KEY_PREFIX}:knowledge:crawl-stop:${sourceId}`;

export interface CrawlLocks {
  /** The lock's token, or undefined when a crawl (or a removal) of this source holds it. */
  take(sourceId: string): Promise<string | undefined>;
  release(sourceId: string, token: string): Promise<void>;
  /** Whether the crawl holding `token` was told to stop (its source removed). */
  stopped(sourceId: string, token: string): Promise<boolean>;
  /**
   * Stops the source's running crawl and takes the lock, waiting up to `waitMs` for the crawl to
   * let go; undefined when it did not in time (the crawl still stops, and undoes its writes, when
   * it next looks).
   */
  stopAndTake(sourceId: string, waitMs: number): Promise<string | undefined>;
}

export function createCrawlLocks(redis: RedisClient): CrawlLocks {
  const take = async (sourceId: string) => {
    const token = newId('crawl');
    return (await redis.set(lockKey(sourceId), token, 'PX', CRAWL_LOCK_MS, 'NX')) === 'OK' ? token : undefined;
  };
  return {
    take,
    async release(sourceId, token) {
      // Only if this crawl still holds it.
      await releaseLease(redis, lockKey(sourceId), token);
    },
    async stopped(sourceId, token) {
      return (await redis.get(stopKey(sourceId))) === token;
    },
    async stopAndTake(sourceId, waitMs) {
      const deadline = Date.now() + waitMs;
      for (;;) {
        const token = await take(sourceId);
        if (token) return token;
        const holder = await redis.get(lockKey(sourceId));
        if (holder) await redis.set(stopKey(sourceId), holder, 'PX', CRAWL_LOCK_MS);
        if (Date.now() >= deadline) return undefined;
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
    },
  };
}
