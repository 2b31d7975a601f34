/**
 * The queue layer's Redis keys: a conversation's inbox, its dedupe ids, lock and retry state.
 * Keys of one conversation share a `{conversationKey}` hash tag so they live on one cluster slot.
 */
import { KEY_PREFIX } from '../redis.js';

export const redisKeys = {
  dedupe: (conversationKey: string, messageId: string) => `${KEY_PREFIX}:dedupe:{${conversationKey}}:${messageId}`,
  inbox: (conversationKey: string) => `${KEY_PREFIX}:inbox:{${conversationKey}}`,
  lock: (conversationKey: string) => `${KEY_PREFIX}:lock:{${conversationKey}}`,
  /** Set while a turn job added for the conversation has not yet tried its lock (messages appended meanwhile add none). */
  queued: (conversationKey: string) => `${KEY_PREFIX}:queued:{${conversationKey}}`,
  /** The retry state of the conversation's inbox head (only the head can be failing). */
  retry: (conversationKey: string) => `${KEY_PREFIX}:retry:{${conversationKey}}`,
  /** How long the conversation has waited through failing turns: since when, whether it had the holding message and the apology (`conversation-outage.ts`). */
  outage: (conversationKey: string) => `${KEY_PREFIX}:outage:{${conversationKey}}`,
  /** Set while the worker process `processId` runs (renewed often, short-lived): a turn's running mark names its process. */
  workerAlive: (processId: string) => `${KEY_PREFIX}:worker-alive:{${processId}}`,
  /** When the customer last reported typing (ms, as the reporting process saw it), while that report stands. */
  typing: (conversationKey: string) => `${KEY_PREFIX}:typing:{${conversationKey}}`,
  /**
   * One shard of the notes of messages appended but maybe without a job yet in the turns queue of
   * `queuePrefix` (`intake-ledger.ts`); the shard is the hash tag (the prefix's braces are dropped).
   */
  intakeNotes: (queuePrefix: string, shard: number) => `${KEY_PREFIX}:intake:${queuePrefix.replace(/[{}]/g, '')}:{intake:${shard}}`,
};

/**
 * The pub/sub channel on which an inbox tells the worker holding a conversation that a message
 * arrived (or the customer is typing) while its turn runs: published only while the lock is held,
 * so a message answered alone costs nothing (see `inbox-notices.ts`).
 */
export const INBOX_NOTICE_CHANNEL = `${KEY_PREFIX}:inbox-notices`;

/** How long an inbound message id is remembered for dedupe (Twilio retries for far less). */
export const DEDUPE_TTL_SECONDS = 48 * 60 * 60;
/**
 * How long the `queued` mark stands at most: a job still waiting after this (a long queue) lets
 * the next message add one of its own; an enqueue that failed and could not clear it delays its
 * conversation's messages by no more than this (the failed webhook is retried, a duplicate
 * re-adds its job).
 */
export const QUEUED_TTL_MS = 30_000;
/**
 * An inbox's lifetime from the message that created it (found it empty), not renewed by the
 * messages appended behind that one: an acknowledgement that empties the inbox deletes it, so the
 * next message starts a new one with a new TTL; a takeover's end, which rewrites the inbox, sets it
 * again. An inbox is dropped with messages still in it only if it stayed non-empty this long
 * without a takeover ending in it: no worker drained its conversation for 7 days (the fleet down
 * that long), or its messages kept arriving before the batch ahead of them was answered, without
 * a break, for 7 days.
 */
export const INBOX_TTL_SECONDS = 7 * 24 * 60 * 60;
