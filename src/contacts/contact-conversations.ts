/**
 * Which conversations a website-verified user had: one Redis set per user, named by a keyed
 * hash of the user's external id (HMAC with the service's own secret, so nobody holding the id
 * can recompute the name), holding the widget conversation keys in which the web channel
 * identified that user. A person's export and erasure read it to reach every chat of theirs;
 * the erasure deletes it. Written once per identified turn (`SADD`, idempotent), never read on
 * a turn; a failed write is logged and the turn goes on.
 */
import { createHmac } from 'node:crypto';
import type { Logger } from '../logger.js';
import { KEY_PREFIX, type RedisClient } from '../redis.js';

export interface ContactConversations {
  /** Notes that `conversationKey` belongs to the verified user `externalId` (never fails). */
  note(externalId: string, conversationKey: string): Promise<void>;
  /** The conversation keys noted for the user. */
  of(externalId: string): Promise<string[]>;
  /** Forgets the user's set; how many conversation keys it held. */
  forget(externalId: string): Promise<number>;
}

export function createContactConversations(redis: RedisClient, secret: string, logger: Logger): ContactConversations {
  const key = (externalId: string) =>
    `${KEY_PREFIX}:user-chats:{${createHmac('sha256', secret).update(`user:${externalId}`).digest('base64url').slice(0, 32)}}`;
  return {
    async note(externalId, conversationKey) {
      await redis.sadd(key(externalId), conversationKey).catch((error: unknown) => logger.warn('user-chat-note-failed', { error }));
    },
    of: (externalId) => redis.smembers(key(externalId)),
    async forget(externalId) {
      const held = await redis.scard(key(externalId));
      await redis.del(key(externalId));
      return held;
    },
  };
}
