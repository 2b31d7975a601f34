/**
 * Per-conversation inboxes in Redis: the arrival order of a conversation's messages. The web
 * side appends (once per message id: dedupe and append are one atomic script); a worker holding
 * the conversation's lock reads the head, answers it, then removes it — so a worker killed
 * mid-turn leaves the message at the head for the next one.
 */
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { InboundMessage } from '../orchestrator/contracts.js';
import { DEDUPE_TTL_SECONDS, INBOX_TTL_SECONDS, redisKeys } from './keys.js';

const InboundMessageSchema = z.object({
  channel: z.string().min(1),
  conversationKey: z.string().min(1),
  messageId: z.string().min(1),
  from: z.object({ address: z.string().min(1), displayName: z.string().optional() }),
  text: z.string(),
  receivedAt: z.number().int().nonnegative(),
  metadata: z.record(z.string(), z.string()),
});

// KEYS: dedupe, inbox. ARGV: payload, dedupe ttl (s), inbox ttl (s). Returns 1 if appended.
const acceptScript = `
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[2]) then
  redis.call('RPUSH', KEYS[2], ARGV[1])
  redis.call('EXPIRE', KEYS[2], ARGV[3])
  return 1
end
return 0`;

// KEYS: inbox. ARGV: message id. Pops the head only if it is that message.
const ackScript = `
local head = redis.call('LINDEX', KEYS[1], 0)
if head and cjson.decode(head).messageId == ARGV[1] then
  redis.call('LPOP', KEYS[1])
  return 1
end
return 0`;

export interface ConversationInbox {
  /** Appends a message unless its id was seen; false for a duplicate (e.g. a Twilio retry). */
  accept(message: InboundMessage): Promise<boolean>;
  /** The oldest unanswered message, or undefined when the inbox is empty. */
  head(conversationKey: string): Promise<InboundMessage | undefined>;
  /** Removes the head once it has been answered. */
  acknowledge(conversationKey: string, messageId: string): Promise<void>;
  /** Drops a head that can't be parsed, so one corrupt entry never blocks a conversation. */
  discardHead(conversationKey: string): Promise<void>;
  size(conversationKey: string): Promise<number>;
  /** Counts a failed attempt at a message; returns how many there have been. */
  recordFailure(conversationKey: string, messageId: string): Promise<number>;
}

export class CorruptInboxEntryError extends Error {
  override name = 'CorruptInboxEntryError';
}

export function createConversationInbox(redis: Redis): ConversationInbox {
  return {
    async accept(message) {
      const appended = await redis.eval(
        acceptScript,
        2,
        redisKeys.dedupe(message.conversationKey, message.messageId),
        redisKeys.inbox(message.conversationKey),
        JSON.stringify(message),
        DEDUPE_TTL_SECONDS,
        INBOX_TTL_SECONDS,
      );
      return appended === 1;
    },

    async head(conversationKey) {
      const raw = await redis.lindex(redisKeys.inbox(conversationKey), 0);
      if (raw === null) return undefined;
      let json: unknown;
      try {
        json = JSON.parse(raw);
      } catch (cause) {
        throw new CorruptInboxEntryError(`inbox head of ${conversationKey} is not JSON`, { cause });
      }
      const parsed = InboundMessageSchema.safeParse(json);
      if (!parsed.success) throw new CorruptInboxEntryError(`inbox head of ${conversationKey} is malformed`);
      return parsed.data;
    },

    async acknowledge(conversationKey, messageId) {
      await redis.eval(ackScript, 1, redisKeys.inbox(conversationKey), messageId);
    },

    async discardHead(conversationKey) {
      await redis.lpop(redisKeys.inbox(conversationKey));
    },

    size(conversationKey) {
      return redis.llen(redisKeys.inbox(conversationKey));
    },

    async recordFailure(conversationKey, messageId) {
      const key = `${redisKeys.inbox(conversationKey)}:failures:${messageId}`;
      const results = await redis.multi().incr(key).expire(key, DEDUPE_TTL_SECONDS).exec();
      return Number(results?.[0]?.[1] ?? 0);
    },
  };
}
