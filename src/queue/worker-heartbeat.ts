/**
 * A worker process's heartbeat: a turn's running mark names its process, so a holder that finds
 * another's mark can tell a worker that died in the turn (no heartbeat) from one that only lost
 * the lock (a stall) and is still cutting its turn short. It lives two thirds of the lock's TTL,
 * renewed every third: by the time a dead holder's lock has expired, so has its heartbeat.
 *
 * A missing heartbeat is evidence of a death only while Redis has been reachable throughout: an
 * outage longer than the heartbeat lets every live worker's lapse (and leaves the marks of turns
 * it cut short, which it could not clear), so for a while after this process saw its Redis
 * connection fail, a mark without a heartbeat counts as no death. Nor is this process's own mark.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../logger.js';
import type { RedisClient } from '../redis.js';
import { lockRenewIntervalMs } from './conversation-lock.js';
import { redisKeys } from './keys.js';

/** The longest ioredis waits between reconnection attempts (its default strategy): a live worker may be that late back. */
const RECONNECT_DELAY_MS = 2_000;

export interface WorkerHeartbeat {
  /** The running mark a turn of this process writes: its process and its lock token. */
  runningMark(token: string): string;
  /** Whether the worker that wrote a running mark surely died (a mark without a process is an older release's: counted as gone). */
  isDead(mark: string): Promise<boolean>;
  stop(): void;
}

export function startWorkerHeartbeat(redis: RedisClient, lockTtlMs: number, logger: Logger): WorkerHeartbeat {
  const processId = randomUUID();
  const aliveKey = redisKeys.workerAlive(processId);
  const heartbeatMs = Math.max(100, Math.floor((lockTtlMs * 2) / 3));
  const everyMs = lockRenewIntervalMs(lockTtlMs);
  // After Redis failed, how long until every live worker has surely beaten again.
  const outageGraceMs = heartbeatMs + 2 * everyMs + RECONNECT_DELAY_MS;
  let troubleAt: number | undefined;
  const trouble = () => {
    troubleAt = Date.now();
  };
  // A connection that comes back ends the outage: the grace runs from then.
  const back = () => {
    if (troubleAt !== undefined) troubleAt = Date.now();
  };
  redis.on('close', trouble).on('error', trouble).on('ready', back);
  const beat = () => {
    redis.set(aliveKey, '1', 'PX', heartbeatMs).catch((error: unknown) => {
      trouble();
      logger.warn('worker-heartbeat-failed', { error });
    });
  };
  beat();
  const timer = setInterval(beat, everyMs);
  timer.unref();
  return {
    runningMark: (token) => `${processId}|${token}`,
    async isDead(mark) {
      const [markProcess, token] = mark.split('|');
      if (token === undefined || !markProcess) return true;
      if (markProcess === processId) return false;
      if (troubleAt !== undefined && Date.now() - troubleAt < outageGraceMs) return false;
      return (await redis.exists(redisKeys.workerAlive(markProcess))) === 0;
    },
    stop() {
      clearInterval(timer);
      redis.off('close', trouble).off('error', trouble).off('ready', back);
      redis.del(aliveKey).catch(() => undefined);
    },
  };
}
