/**
 * Per-conversation inboxes in Redis: the arrival order of a conversation's messages. The web
 * side appends (once per message id: dedupe and append are one atomic script); a worker holding
 * the conversation's lock reads the head, answers it, then removes it — so a worker killed
 * mid-turn leaves the message at the head for the next one.
 *
 * The inbox also keeps the retry state of its head (only the head can be failing): when it
 * first failed, how many attempts, when the next one is due. It is the one place attempts are
 * counted, and it is cleared when the head is removed. Scripts never decode message text:
 * the head is acknowledged by comparing the exact stored entry.
 */
import type { RedisClient } from '../redis.js';
import { AppError } from '../errors/index.js';
import { z } from 'zod';
import { InboundMessageSchema, type InboundMessage } from '../contracts/index.js';
import { DEDUPE_TTL_SECONDS, INBOX_TTL_SECONDS, redisKeys } from './keys.js';

const RetryStateSchema = z.object({
  messageId: z.string().min(1),
  first: z.coerce.number().int().nonnegative(),
  attempts: z.coerce.number().int().nonnegative(),
  suspect: z.coerce.number().int().nonnegative(),
  next: z.coerce.number().int().nonnegative(),
});

// KEYS: dedupe, inbox. ARGV: payload, dedupe ttl (s), inbox ttl (s). Returns 1 if appended.
const acceptScript = `
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[2]) then
  redis.call('RPUSH', KEYS[2], ARGV[1])
  redis.call('EXPIRE', KEYS[2], ARGV[3])
  return 1
end
return 0`;

// KEYS: inbox, retry. ARGV: the head entry exactly as read. Pops the head only if it is that entry.
const ackScript = `
if redis.call('LINDEX', KEYS[1], 0) == ARGV[1] then
  redis.call('LPOP', KEYS[1])
  redis.call('DEL', KEYS[2])
  return 1
end
return 0`;

// KEYS: retry. ARGV: message id, now (ms), first delay (ms), max delay (ms), suspect (0/1), ttl (s).
// Returns attempts, suspect attempts, first failure time, next attempt time.
const failureScript = `
if redis.call('HGET', KEYS[1], 'messageId') ~= ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'messageId', ARGV[1], 'first', ARGV[2], 'attempts', 0, 'suspect', 0)
end
local attempts = redis.call('HINCRBY', KEYS[1], 'attempts', 1)
local suspect = redis.call('HINCRBY', KEYS[1], 'suspect', tonumber(ARGV[5]))
local delay = math.min(tonumber(ARGV[3]) * 2 ^ math.min(attempts - 1, 40), tonumber(ARGV[4]))
local next = string.format('%.0f', tonumber(ARGV[2]) + delay)
redis.call('HSET', KEYS[1], 'next', next)
redis.call('EXPIRE', KEYS[1], ARGV[6])
return {attempts, suspect, redis.call('HGET', KEYS[1], 'first'), next}`;

/** How often and since when the inbox head has failed, and when it may be tried again. */
export interface RetryState {
  attempts: number;
  /** Attempts that failed for a reason not known to be an outage. */
  suspectAttempts: number;
  firstFailureAt: number;
  nextAttemptAt: number;
}

export interface InboxHead {
  message: InboundMessage;
  /** The entry as stored; acknowledging compares it, so nothing needs to decode it in Redis. */
  raw: string;
  /** Set when this message failed before. */
  retry?: RetryState;
}

export interface RetryPolicy {
  firstDelayMs: number;
  maxDelayMs: number;
}

export interface ConversationInbox {
  /** Appends a message unless its id was seen; false for a duplicate (e.g. a Twilio retry). */
  accept(message: InboundMessage): Promise<boolean>;
  /** The oldest unanswered message and its retry state, or undefined when the inbox is empty. */
  head(conversationKey: string): Promise<InboxHead | undefined>;
  /** Removes the head once it has been answered (or given up on), with its retry state. */
  acknowledge(conversationKey: string, head: InboxHead): Promise<void>;
  /** Drops a head that can't be parsed, so one corrupt entry never blocks a conversation. */
  discardHead(conversationKey: string): Promise<void>;
  size(conversationKey: string): Promise<number>;
  /** Counts a failed attempt at the head message and schedules the next one (delay doubling). */
  recordFailure(conversationKey: string, messageId: string, options: RetryPolicy & { suspect: boolean; now: number }): Promise<RetryState>;
}

/** An inbox head that can't be read back (not JSON, or not an inbound message): set aside, never retried. */
export class CorruptInboxEntryError extends AppError {}

/** Text as it enters the inbox: well-formed UTF-16 (a lone surrogate becomes U+FFFD). */
function sanitise(message: InboundMessage): InboundMessage {
  return {
    ...message,
    text: message.text.toWellFormed(),
    from: { ...message.from, ...(message.from.displayName ? { displayName: message.from.displayName.toWellFormed() } : {}) },
  };
}

export function createConversationInbox(redis: RedisClient): ConversationInbox {
  return {
    async accept(message) {
      const appended = await redis.eval(
        acceptScript,
        2,
        redisKeys.dedupe(message.conversationKey, message.messageId),
        redisKeys.inbox(message.conversationKey),
        JSON.stringify(sanitise(message)),
        DEDUPE_TTL_SECONDS,
        INBOX_TTL_SECONDS,
      );
      return appended === 1;
    },

    async head(conversationKey) {
      const results = await redis.pipeline().lindex(redisKeys.inbox(conversationKey), 0).hgetall(redisKeys.retry(conversationKey)).exec();
      const [headResult, retryResult] = results ?? [];
      if (headResult?.[0]) throw headResult[0];
      const raw = headResult?.[1];
      if (typeof raw !== 'string') return undefined;
      let json: unknown;
      try {
        json = JSON.parse(raw);
      } catch (cause) {
        throw new CorruptInboxEntryError(`inbox head of ${conversationKey} is not JSON`, { cause });
      }
      const parsed = InboundMessageSchema.safeParse(json);
      if (!parsed.success) throw new CorruptInboxEntryError(`inbox head of ${conversationKey} is malformed`);
      const retry = RetryStateSchema.safeParse(retryResult?.[1]);
      const message = parsed.data;
      if (!retry.success || retry.data.messageId !== message.messageId) return { message, raw };
      const { attempts, suspect, first, next } = retry.data;
      return { message, raw, retry: { attempts, suspectAttempts: suspect, firstFailureAt: first, nextAttemptAt: next } };
    },

    async acknowledge(conversationKey, head) {
      await redis.eval(ackScript, 2, redisKeys.inbox(conversationKey), redisKeys.retry(conversationKey), head.raw);
    },

    async discardHead(conversationKey) {
      await redis.multi().lpop(redisKeys.inbox(conversationKey)).del(redisKeys.retry(conversationKey)).exec();
    },

    size(conversationKey) {
      return redis.llen(redisKeys.inbox(conversationKey));
    },

    async recordFailure(conversationKey, messageId, { now, firstDelayMs, maxDelayMs, suspect }) {
      const result = (await redis.eval(
        failureScript,
        1,
        redisKeys.retry(conversationKey),
        messageId,
        now,
        firstDelayMs,
        maxDelayMs,
        suspect ? 1 : 0,
        DEDUPE_TTL_SECONDS,
      )) as [number, number, string, string];
      return {
        attempts: Number(result[0]),
        suspectAttempts: Number(result[1]),
        firstFailureAt: Number(result[2]),
        nextAttemptAt: Number(result[3]),
      };
    },
  };
}
