/**
 * A per-conversation mutual-exclusion lock in Redis, so one conversation's turns run one at a
 * time across every worker. It expires on its own (a killed worker's lock frees itself within
 * one TTL), is renewed while its turn runs, and is only released or renewed by the token that
 * holds it.
 *
 * It is also a fence: the holder knows how long the lock is surely its own (the TTL counted
 * from when its last successful renewal was sent) and reads `held` as false, synchronously,
 * once that time is nearly up — so a worker whose event loop stalled past the TTL learns it
 * lost the lock before its next send, even before a renewal timer had a chance to run.
 */
import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../redis.js';
import { releaseLease, renewLease } from '../redis-lease.js';
import { redisKeys } from './keys.js';

/** How often a lock of this TTL is renewed: a third of it, so one late renewal never loses it. */
export const lockRenewIntervalMs = (ttlMs: number) => Math.max(100, Math.floor(ttlMs / 3));

/** How long until a conversation's lock expires unless renewed (0 when nobody holds it). */
export async function lockExpiresInMs(redis: RedisClient, conversationKey: string): Promise<number> {
  return Math.max(0, await redis.pttl(redisKeys.lock(conversationKey)));
}

export interface HeldLock {
  /**
   * True while the lock is surely this holder's: renewals keep succeeding and the last one is
   * recent enough. Reading it is the fence: false (and `onLost` called) once the lock may have
   * expired, whether or not a renewal timer has noticed yet.
   */
  readonly held: boolean;
  /** Until when (ms) `held` reads true unless a renewal extends it; 0 once it reads false. */
  readonly heldUntil: number;
  /** Stops renewing and deletes the key if it still holds this holder's token, even once `held` read false. */
  release(): Promise<void>;
  /**
   * Runs `release`, a script that frees the lock by its token along with other work (the
   * inbox's acknowledgement when it empties it): renewals meanwhile are not taken as the lock
   * lost. When it reports the lock freed, this holder stops renewing and holds it no more.
   */
  releaseWith<T>(release: (token: string) => Promise<{ released: boolean; value: T }>): Promise<T>;
}

/**
 * A request for the lock: sent as `SET key token PX ttl NX GET`, alone or in a pipeline with the
 * holder's first reads. Its answer is the value it found (`lockTaken`).
 */
export interface LockRequest {
  key: string;
  token: string;
  ttlMs: number;
  requestedAt: number;
}

export function lockRequest(conversationKey: string, ttlMs: number): LockRequest {
  return { key: redisKeys.lock(conversationKey), token: randomUUID(), ttlMs, requestedAt: Date.now() };
}

/**
 * Whether a lock request's `SET … NX GET` took the lock: it found no holder, or found its own
 * token — the request ran before, but its answer was lost (a Redis shut down right after running
 * it) and the client sent it again on reconnecting. Read as taken by another, that lock would be
 * nobody's until it expired, and the messages waiting behind it nobody's to answer.
 */
export function lockTaken(found: unknown, token: string): boolean {
  return found === null || found === token;
}

export async function acquireConversationLock(redis: RedisClient, conversationKey: string, ttlMs: number, onLost: () => void): Promise<HeldLock | undefined> {
  const request = lockRequest(conversationKey, ttlMs);
  if (!lockTaken(await redis.set(request.key, request.token, 'PX', ttlMs, 'NX', 'GET'), request.token)) return undefined;
  return holdConversationLock(redis, request, onLost);
}

/** The holder's side of a lock its request acquired: renewed every third of the TTL, and the fence. */
export function holdConversationLock(redis: RedisClient, request: LockRequest, onLost: () => void): HeldLock {
  const { key, token, ttlMs, requestedAt } = request;
  // The lock is surely ours until the TTL, counted from when the last successful SET/PEXPIRE
  // was sent, less a margin for the time a send takes to leave once the fence let it through.
  const margin = Math.min(1000, Math.floor(ttlMs / 5));
  let validUntil = requestedAt + ttlMs;
  let held = true;
  /** This holder let the lock go (`release`, or a releasing script that freed it): nothing left to free. */
  let freed = false;
  let releasing = false;
  const lose = (): void => {
    if (!held) return;
    held = false;
    clearInterval(renew);
    onLost();
  };
  const expired = () => Date.now() >= validUntil - margin;
  const renew = setInterval(() => {
    if (expired()) return lose();
    const sentAt = Date.now();
    renewLease(redis, key, token, ttlMs).then(
      (renewed) => {
        if (renewed) validUntil = Math.max(validUntil, sentAt + ttlMs);
        // A renewal that crossed a releasing script finds the lock freed by this holder itself.
        else if (!releasing) lose();
      },
      () => {
        // A failed renewal is retried on the next tick; the lock is lost once its time runs out.
      },
    );
  }, lockRenewIntervalMs(ttlMs));
  renew.unref();

  return {
    get held() {
      if (held && expired()) lose();
      return held;
    },
    get heldUntil() {
      if (held && expired()) lose();
      return held ? validUntil - margin : 0;
    },
    async release() {
      clearInterval(renew);
      if (freed) return;
      freed = true;
      const lost = !held;
      held = false;
      // Freed by its token even once the fence read it as lost: a stalled holder's key outlives the
      // fence by up to the margin, and a retry of its job that found it taken would leave the
      // inbox to a holder that already gave up. Another holder's lock is never touched. A lost
      // lock's key expires within the margin anyway: failing to free it is no error.
      const freeing = releaseLease(redis, key, token);
      await (lost ? freeing.catch(() => undefined) : freeing);
    },
    async releaseWith(release) {
      releasing = true;
      try {
        const { released, value } = await release(token);
        if (released) {
          clearInterval(renew);
          held = false;
          freed = true;
        }
        return value;
      } finally {
        releasing = false;
      }
    },
  };
}
