/**
 * The queue layer's Redis keys: a conversation's inbox, its dedupe ids, lock and retry state.
 * Keys of one conversation share a `{conversationKey}` hash tag so they live on one cluster slot.
 */
import { KEY_PREFIX } from '../redis.js';

export const redisKeys = {
  dedupe: (conversationKey: string, messageId: string) => `${KEY_PREFIX}:dedupe:{${conversationKey}}:${messageId}`,
  inbox: (conversationKey: string) => `${KEY_PREFIX}:inbox:{${conversationKey}}`,
  lock: (conversationKey: string) => `${KEY_PREFIX}:lock:{${conversationKey}}`,
  /** The retry state of the conversation's inbox head (only the head can be failing). */
  retry: (conversationKey: string) => `${KEY_PREFIX}:retry:{${conversationKey}}`,
};

/** How long an inbound message id is remembered for dedupe (Twilio retries for far less). */
export const DEDUPE_TTL_SECONDS = 48 * 60 * 60;
/** An inbox no worker touched for this long is dropped (its conversation went silent). */
export const INBOX_TTL_SECONDS = 7 * 24 * 60 * 60;
