/**
 * The turn state of an inbox's head (its `retry` hash: only the head's batch can be in a turn):
 * how many messages its batch holds once a turn started on it (frozen, so a retry or the next
 * worker answers exactly the same batch and resumes the same reply, whatever arrived since), the
 * running mark of its turn, whether that turn was started over, its give-up decision, and its
 * retry state: when it first failed, how many attempts, when the next one is due. It is the one
 * place attempts are counted, and the inbox's acknowledgement clears it with the batch.
 */
import type { RedisClient } from '../redis.js';
import { DEDUPE_TTL_SECONDS, INBOX_TTL_SECONDS, redisKeys } from './keys.js';
import type { InboxBatch, RetryPolicy, RetryState } from './inbox-head.js';
import { failureScript, freezeScript, headFieldScript, restartScript, stoppedScript } from './inbox-scripts.js';

export interface InboxTurnState {
  /**
   * Starts the head's turn over with whatever arrived since (a message arrived before anything of
   * the turn left): its batch is no longer frozen, and it is marked restarted.
   */
  restart(conversationKey: string, messageId: string): Promise<void>;
  /**
   * Fixes the batch before its turn starts, so every later attempt answers the same messages;
   * with the holder's lock token, also marks the turn running (a mark only a worker that dies
   * in the turn leaves behind: `recordFailure`, `acknowledge` and `turnStopped` clear it).
   */
  freeze(conversationKey: string, batch: InboxBatch, runningToken?: string): Promise<InboxBatch>;
  /** Marks the turn of a frozen head's batch running (as `freeze` does for a batch it freezes). */
  markRunning(conversationKey: string, messageId: string, runningToken: string): Promise<void>;
  /** Clears the running mark of a turn that ended without its worker dying (cut short, not failed). */
  turnStopped(conversationKey: string, runningToken: string): Promise<void>;
  /** Records that the head's batch is given up on, so a holder after a lost lock finishes that instead of another turn. */
  markGivenUp(conversationKey: string, messageId: string, reason: string): Promise<void>;
  /** Counts a failed attempt at the head's batch (by its first message) and schedules the next one (delay doubling). */
  recordFailure(conversationKey: string, messageId: string, options: RetryPolicy & { suspect: boolean; now: number }): Promise<RetryState>;
}

export function createInboxTurnState(redis: RedisClient): InboxTurnState {
  return {
    async restart(conversationKey, messageId) {
      await restartScript(redis, [redisKeys.retry(conversationKey)], [messageId]);
    },

    async freeze(conversationKey, batch, runningToken) {
      const [head] = batch.entries;
      const frozen = await freezeScript(
        redis,
        [redisKeys.inbox(conversationKey), redisKeys.retry(conversationKey)],
        [head.raw, head.message.messageId, batch.entries.length, INBOX_TTL_SECONDS, runningToken ?? '', batch.stateless ? 1 : 0],
      );
      // Only its lock holder changes an inbox's head: a head that moved is a bug, not a race.
      if (frozen !== 1) throw new Error(`the inbox head of ${conversationKey} changed under its lock`);
      return { ...batch, frozen: true, stateless: false };
    },

    async markRunning(conversationKey, messageId, runningToken) {
      await headFieldScript(redis, [redisKeys.retry(conversationKey)], [messageId, 'running', runningToken]);
    },

    async turnStopped(conversationKey, runningToken) {
      await stoppedScript(redis, [redisKeys.retry(conversationKey)], [runningToken]);
    },

    async markGivenUp(conversationKey, messageId, reason) {
      await headFieldScript(redis, [redisKeys.retry(conversationKey)], [messageId, 'given', reason]);
    },

    async recordFailure(conversationKey, messageId, { now, firstDelayMs, maxDelayMs, suspect }) {
      const result = (await failureScript(
        redis,
        [redisKeys.retry(conversationKey)],
        [messageId, now, firstDelayMs, maxDelayMs, suspect ? 1 : 0, DEDUPE_TTL_SECONDS],
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
