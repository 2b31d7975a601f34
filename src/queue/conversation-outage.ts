/**
 * A conversation's wait through failing turns (an outage), kept beside its inbox: since when its
 * oldest waiting message has waited, whether the customer had the holding message, and which
 * batch's give-up apologised. One wait per conversation, not per batch: the retry budget counts
 * from its start, so the batches behind a failing head take no budget of their own; the customer
 * hears the holding message once, and once the budget is spent one apology covers every message
 * that had arrived by then (the batches behind it still get their attempt, and are recorded
 * failed without another apology if it fails). A message arriving after the apology starts a new
 * wait. A batch answered, or given up on for anything but its budget, ends it (the inbox's
 * acknowledgement deletes it in the same step).
 */
import { luaScript, type RedisClient } from '../redis.js';
import { DEDUPE_TTL_SECONDS, redisKeys } from './keys.js';

export interface ConversationWait {
  /** When the oldest message waiting at its start arrived (ms): the retry budget counts from here. */
  since: number;
  /** The holding message went out in this wait. */
  held: boolean;
  /** The head of the batch whose give-up apologised for this wait, and when it was decided (ms). */
  apology?: { messageId: string; at: number };
}

// KEYS: outage. ARGV: the failed batch's oldest arrival (ms), ttl (s). A batch whose messages all
// arrived after this wait's apology starts a new wait. Returns since, held, apology, apology time.
const failedScript = luaScript(`
local at = tonumber(redis.call('HGET', KEYS[1], 'apologyAt') or '')
if at and tonumber(ARGV[1]) > at then redis.call('DEL', KEYS[1]) end
redis.call('HSETNX', KEYS[1], 'since', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return redis.call('HMGET', KEYS[1], 'since', 'held', 'apology', 'apologyAt')`);

// KEYS: outage. ARGV: message id, time (ms). Notes the wait's apology (the first give-up's only).
const apologyScript = luaScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HSETNX', KEYS[1], 'apology', ARGV[1]) == 1 then redis.call('HSET', KEYS[1], 'apologyAt', ARGV[2]) end
return 1`);

// KEYS: outage. The customer had the holding message of the wait under way (none: nothing to note).
const heldScript = luaScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'held', '1') end
return 1`);

const waitOf = (fields: unknown, fallbackSince: number): ConversationWait => {
  const [since, held, apology, apologyAt] = (Array.isArray(fields) ? fields : []) as (string | null)[];
  return {
    since: since ? Number(since) : fallbackSince,
    held: held === '1',
    ...(apology && apologyAt ? { apology: { messageId: apology, at: Number(apologyAt) } } : {}),
  };
};

export interface ConversationOutage {
  /** A batch whose oldest message arrived at `oldestAt` failed: the conversation's wait (begun now, unless one is under way). */
  failed(conversationKey: string, oldestAt: number): Promise<ConversationWait>;
  /** The wait under way, if any. */
  read(conversationKey: string): Promise<ConversationWait | undefined>;
  /** The customer had the holding message of this wait. */
  held(conversationKey: string): Promise<void>;
  /** The batch headed by `messageId` is given up on for its budget: its apology is this wait's (unless one was). */
  apologised(conversationKey: string, messageId: string, at: number): Promise<void>;
}

export function createConversationOutage(redis: RedisClient): ConversationOutage {
  return {
    async failed(conversationKey, oldestAt) {
      return waitOf(await failedScript(redis, [redisKeys.outage(conversationKey)], [oldestAt, DEDUPE_TTL_SECONDS]), oldestAt);
    },
    async read(conversationKey) {
      const fields = await redis.hmget(redisKeys.outage(conversationKey), 'since', 'held', 'apology', 'apologyAt');
      return fields[0] === null ? undefined : waitOf(fields, 0);
    },
    async held(conversationKey) {
      await heldScript(redis, [redisKeys.outage(conversationKey)], []);
    },
    async apologised(conversationKey, messageId, at) {
      await apologyScript(redis, [redisKeys.outage(conversationKey)], [messageId, at]);
    },
  };
}

/** Whether giving up on the batch headed by `messageId` is covered by its wait's apology (another batch's): nothing more is sent. */
export const apologisedBefore = (wait: ConversationWait | undefined, messageId: string): boolean =>
  wait?.apology !== undefined && wait.apology.messageId !== messageId;
