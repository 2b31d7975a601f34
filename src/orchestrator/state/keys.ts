/**
 * The orchestrator's Redis keys: a conversation's facts per role, active-role pointer, session
 * facts, pending question and stored decisions. They share the conversation's `{key}` hash tag,
 * so a reset can clear them in one command on one cluster slot.
 */
import { KEY_PREFIX } from '../../redis.js';

export const stateKeys = {
  activeRole: (conversationKey: string) => `${KEY_PREFIX}:state:{${conversationKey}}:role`,
  facts: (conversationKey: string, roleId: string) => `${KEY_PREFIX}:state:{${conversationKey}}:facts:${roleId}`,
  pending: (conversationKey: string) => `${KEY_PREFIX}:state:{${conversationKey}}:pending`,
  session: (conversationKey: string) => `${KEY_PREFIX}:state:{${conversationKey}}:session`,
  decision: (conversationKey: string, runId: string) => `${KEY_PREFIX}:decision:{${conversationKey}}:${runId}`,
};

/** Facts, the active-role pointer and session facts outlive a quiet week, then go. */
export const STATE_TTL_SECONDS = 7 * 24 * 60 * 60;
/** A stored decision (and a pending question) lives as long as a customer may take to answer. */
export const DECISION_TTL_SECONDS = 60 * 60;

/** When a question asked now stops taking answers: its pending entry's expiry, or the tool's own if sooner. */
export function questionExpiresAt(toolExpiresAt: number | undefined, now = Date.now()): number {
  return Math.min(toolExpiresAt ?? Infinity, now + DECISION_TTL_SECONDS * 1000);
}
