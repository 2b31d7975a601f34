/**
 * Which conversations a website-verified user had: one Redis set per identity the site gave —
 * its user id (`user:<external id>`) and, when the site signed one, its e-mail
 * (`email:<lowercase>`) — named by a keyed hash of that identity (HMAC with the service's own
 * secret, so nobody holding the id or the e-mail can recompute the name), holding the widget
 * conversation keys in which the web channel identified that user and the other identity noted
 * with it (so a person named by their e-mail alone leads to their user id, and back). A person's
 * export and erasure read them to reach every chat of theirs, even when no contact declares the
 * user id; the erasure deletes them. Written once per identified turn (`SADD`, idempotent), never
 * read on a turn; a failed write is logged and the turn goes on.
 */
import { createHmac } from 'node:crypto';
import type { Logger } from '../logger.js';
import { KEY_PREFIX, type RedisClient } from '../redis.js';

export interface ContactConversations {
  /** Notes that `conversationKey` belongs to the verified user, under its id and its e-mail (never fails). */
  note(user: { externalId: string; email?: string | undefined }, conversationKey: string): Promise<void>;
  /** What an identity's set holds (`user:<external id>` or `email:<address>`): conversation keys, and the identities noted with it. */
  of(identity: string): Promise<string[]>;
  /** Forgets an identity's set; how many entries it held. */
  forget(identity: string): Promise<number>;
}

/** The identities a set may hold besides conversation keys. */
export const isChatIdentity = (member: string) => member.startsWith('user:') || member.startsWith('email:');

export function createContactConversations(redis: RedisClient, secret: string, logger: Logger): ContactConversations {
  const key = (identity: string) => `${KEY_PREFIX}:user-chats:{${createHmac('sha256', secret).update(identity).digest('base64url').slice(0, 32)}}`;
  return {
    async note({ externalId, email }, conversationKey) {
      const user = `user:${externalId}`;
      const mail = email ? `email:${email.toLowerCase()}` : undefined;
      // One set per identity (each its own hash tag): two commands, each idempotent.
      const writes = [redis.sadd(key(user), conversationKey, ...(mail ? [mail] : []))];
      if (mail) writes.push(redis.sadd(key(mail), conversationKey, user));
      await Promise.all(writes).catch((error: unknown) => logger.warn('user-chat-note-failed', { error }));
    },
    of: (identity) => redis.smembers(key(identity)),
    async forget(identity) {
      const held = await redis.scard(key(identity));
      await redis.del(key(identity));
      return held;
    },
  };
}
