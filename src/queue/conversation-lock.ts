/**
 * A per-conversation mutual-exclusion lock in Redis, so one conversation's turns run one at a
 * time across every worker. It expires on its own (a killed worker's lock frees itself), is
 * renewed while its turn runs, and is only released or renewed by the token that holds it.
 */
import { randomUUID } from 'node:crypto';
import type { RedisClient } from '../redis.js';
import { redisKeys } from './keys.js';

const releaseScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

const extendScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`;

export interface HeldLock {
  /** True while renewals keep succeeding; false once the lock was lost to expiry. */
  readonly held: boolean;
  release(): Promise<void>;
}

export async function acquireConversationLock(redis: RedisClient, conversationKey: string, ttlMs: number, onLost: () => void): Promise<HeldLock | undefined> {
  const key = redisKeys.lock(conversationKey);
  const token = randomUUID();
  const acquired = await redis.set(key, token, 'PX', ttlMs, 'NX');
  if (acquired !== 'OK') return undefined;

  let held = true;
  const renew = setInterval(
    () => {
      redis.eval(extendScript, 1, key, token, ttlMs).then(
        (result) => {
          if (result !== 1 && held) {
            held = false;
            clearInterval(renew);
            onLost();
          }
        },
        () => {
          // A failed renewal is retried on the next tick; the lock only counts as lost on expiry.
        },
      );
    },
    Math.max(100, Math.floor(ttlMs / 3)),
  );
  renew.unref();

  return {
    get held() {
      return held;
    },
    async release() {
      clearInterval(renew);
      if (!held) return;
      held = false;
      await redis.eval(releaseScript, 1, key, token);
    },
  };
}
