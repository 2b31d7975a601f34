/**
 * Every Redis key the service writes, in one place, so prefixes and TTLs stay consistent.
 * Keys of one conversation share a `{conversationKey}` hash tag so they live on one cluster slot.
 */
export const KEY_PREFIX = 'asst';

export const redisKeys = {
  dedupe: (conversationKey: string, messageId: string) => `${KEY_PREFIX}:dedupe:{${conversationKey}}:${messageId}`,
  inbox: (conversationKey: string) => `${KEY_PREFIX}:inbox:{${conversationKey}}`,
  lock: (conversationKey: string) => `${KEY_PREFIX}:lock:{${conversationKey}}`,
  /** The retry state of the conversation's inbox head (only the head can be failing). */
  retry: (conversationKey: string) => `${KEY_PREFIX}:retry:{${conversationKey}}`,
  activeRole: (conversationKey: string) => `${KEY_PREFIX}:state:{${conversationKey}}:role`,
  facts: (conversationKey: string, roleId: string) => `${KEY_PREFIX}:state:{${conversationKey}}:facts:${roleId}`,
  pending: (conversationKey: string) => `${KEY_PREFIX}:state:{${conversationKey}}:pending`,
  session: (conversationKey: string) => `${KEY_PREFIX}:state:{${conversationKey}}:session`,
  decision: (conversationKey: string, runId: string) => `${KEY_PREFIX}:decision:{${conversationKey}}:${runId}`,
};

/** How long an inbound message id is remembered for dedupe (Twilio retries for far less). */
export const DEDUPE_TTL_SECONDS = 48 * 60 * 60;
/** An inbox no worker touched for this long is dropped (its conversation went silent). */
export const INBOX_TTL_SECONDS = 7 * 24 * 60 * 60;
/** Facts, the active-role pointer and session facts outlive a quiet week, then go. */
export const STATE_TTL_SECONDS = 7 * 24 * 60 * 60;
/** A stored decision (and a pending question) lives as long as a customer may take to answer. */
export const DECISION_TTL_SECONDS = 60 * 60;
