/**
 * Per-conversation inboxes in Redis: the arrival order of a conversation's messages. The web
 * side appends (once per message id: dedupe and append are one atomic script); a worker holding
 * the conversation's lock reads a batch from the head, answers it with one turn, then removes
 * it — so a worker killed mid-turn leaves the batch at the head for the next one.
 *
 * The inbox also keeps the turn state of its head (only the head's batch can be in a turn):
 * how many messages its batch holds once a turn started on it (frozen, so a retry or the next
 * worker answers exactly the same batch and resumes the same reply, whatever arrived since),
 * and its retry state: when it first failed, how many attempts, when the next one is due. It is
 * the one place attempts are counted, and it is cleared when the batch is removed. Scripts never
 * decode message text: a batch is acknowledged by comparing the exact stored entries (placing a
 * takeover's end reads only which entries are a teammate's).
 *
 * A takeover's end (handed back or closed) is not appended but placed after the teammate's last
 * waiting entry, ahead of the customer messages waiting behind it: the customer is told the
 * assistant is back before the assistant answers them (see `takeover-inbound.ts`).
 */
import type { RedisClient } from '../redis.js';
import type { InboundMessage } from '../contracts/index.js';
import { DEDUPE_TTL_SECONDS, INBOX_NOTICE_CHANNEL, INBOX_TTL_SECONDS, QUEUED_TTL_MS, redisKeys } from './keys.js';
import { lockTaken, type LockRequest } from './conversation-lock.js';
import { headBatch, MAX_BATCH_MESSAGES, sanitise, type InboxBatch } from './inbox-head.js';
import { createInboxTurnState, type InboxTurnState } from './inbox-turn-state.js';
import { acceptScript, ackScript, takeoverEndScript, typingScript } from './inbox-scripts.js';

export { CorruptInboxEntryError, MAX_BATCH_MESSAGES } from './inbox-head.js';
export type { InboxBatch, RetryPolicy } from './inbox-head.js';

/** The inbox of each conversation; its head's turn state is `InboxTurnState`'s (`inbox-turn-state.ts`). */
export interface ConversationInbox extends InboxTurnState {
  /**
   * Appends a message unless its id was seen: `duplicate` (e.g. a Twilio retry), `appended` (the
   * caller adds its job; the conversation is marked queued until that job tries the lock), or
   * appended where it needs no job of its own, one would only find the lock taken and complete:
   *   - `held`: a worker holds the conversation's lock; it answers the message before it lets
   *     go (it frees the lock only in the step that empties the inbox, or re-checks the inbox
   *     after freeing it; a killed holder's own job is run again);
   *   - `queued`: a job added for the conversation has not yet tried the lock; whoever gets the
   *     lock reads the inbox after this message was appended.
   * A takeover's end goes right after the last teammate entry, ahead of waiting customer
   * messages, never into the head's batch while it may be in a turn.
   */
  accept(message: InboundMessage): Promise<'appended' | 'held' | 'queued' | 'duplicate'>;
  /**
   * The customer is typing (`standsMs` > 0: the report stands that long) or stopped (0). A worker
   * holding the conversation is told on the notice channel.
   */
  reportTyping(conversationKey: string, standsMs: number): Promise<void>;
  /** Clears the queued mark after adding the job `accept` asked for failed (the caller answers 503). */
  unmarkQueued(conversationKey: string): Promise<void>;
  /**
   * The head's batch: the batch a turn already started on (frozen), else the oldest unanswered
   * messages, up to `maxMessages` and up to the first unreadable one; undefined when empty. The
   * typing report is read only when `maxMessages` > 1: one turn per message never waits on it.
   */
  batch(conversationKey: string, maxMessages: number): Promise<InboxBatch | undefined>;
  /**
   * Sends the conversation lock's request and the head's read in one round trip: whether the
   * lock was acquired, and (read only by its holder) the head's batch as `batch` would return
   * it (throwing as it would).
   */
  lockAndBatch(conversationKey: string, maxMessages: number, lock: LockRequest): Promise<{ acquired: boolean; batch: () => InboxBatch | undefined }>;
  /**
   * Removes the batch once it has been answered (or given up on), with its turn state. With the
   * holder's lock token, an inbox left empty frees the lock in the same step: true when it did.
   */
  acknowledge(conversationKey: string, batch: InboxBatch, lockToken?: string): Promise<boolean>;
  /**
   * `acknowledge` by the lock's holder, which goes on with the conversation: the same step reads
   * the new head's batch (as `batch` would return it, throwing as it would) unless it freed the
   * lock. The batch's turn state is deleted in that step, so the new head's is known to be none;
   * as is the conversation's wait (`conversation-outage.ts`) unless `keepsWait` (a budget give-up).
   */
  acknowledgeAndBatch(
    conversationKey: string,
    batch: InboxBatch,
    lockToken: string,
    maxMessages: number,
    keepsWait?: boolean,
  ): Promise<{ released: boolean; batch?: () => InboxBatch | undefined }>;
  /** Drops a head that can't be parsed, so one corrupt entry never blocks a conversation. */
  discardHead(conversationKey: string): Promise<void>;
  size(conversationKey: string): Promise<number>;
}

export function createConversationInbox(redis: RedisClient): ConversationInbox {
  /** The acknowledgement (see `ackScript`); `maxMessages` > 0 reads the next batch in the same step (the typing report with it when > 1). */
  const acknowledgeScript = async (
    conversationKey: string,
    batch: InboxBatch,
    lockToken: string,
    maxMessages: number,
    keepsWait = false,
  ): Promise<unknown[]> => {
    const keys = [redisKeys.inbox(conversationKey), redisKeys.retry(conversationKey), redisKeys.lock(conversationKey), redisKeys.typing(conversationKey)];
    const result = await ackScript(
      redis,
      [...keys, redisKeys.outage(conversationKey)],
      // Only a batch that was frozen or failed left turn state to clear (a stale one for another head is never read as its).
      [
        lockToken,
        !keepsWait ? 2 : batch.frozen || batch.retry || batch.crashes > 0 || batch.givenUp || batch.restarted ? 1 : 0,
        maxMessages > 0 ? MAX_BATCH_MESSAGES : 0,
        maxMessages > 1 ? 1 : 0,
        ...batch.entries.map((entry) => entry.raw),
      ],
    );
    return Array.isArray(result) ? result : [result];
  };
  return {
    async accept(message) {
      const keys = [
        redisKeys.dedupe(message.conversationKey, message.messageId),
        redisKeys.inbox(message.conversationKey),
        redisKeys.lock(message.conversationKey),
        redisKeys.queued(message.conversationKey),
      ];
      const args = [JSON.stringify(sanitise(message)), DEDUPE_TTL_SECONDS, INBOX_TTL_SECONDS, QUEUED_TTL_MS];
      const action = message.teammate?.action;
      // A takeover entry is never coalesced: it can't grow the batch a turn runs on, so its holder is not told.
      const notices = message.teammate ? '' : INBOX_NOTICE_CHANNEL;
      const appended =
        action === 'handed_back' || action === 'closed'
          ? await takeoverEndScript(redis, [...keys, redisKeys.retry(message.conversationKey)], [...args, MAX_BATCH_MESSAGES])
          : await acceptScript(redis, keys, [...args, notices, message.conversationKey]);
      return appended === 3 ? 'queued' : appended === 2 ? 'held' : appended === 1 ? 'appended' : 'duplicate';
    },

    async reportTyping(conversationKey, standsMs) {
      await typingScript(
        redis,
        [redisKeys.typing(conversationKey), redisKeys.lock(conversationKey)],
        [Date.now(), Math.max(0, Math.round(standsMs)), INBOX_NOTICE_CHANNEL, conversationKey],
      );
    },

    async unmarkQueued(conversationKey) {
      await redis.del(redisKeys.queued(conversationKey));
    },

    async batch(conversationKey, maxMessages) {
      const read = redis
        .pipeline()
        .lrange(redisKeys.inbox(conversationKey), 0, MAX_BATCH_MESSAGES - 1)
        .hgetall(redisKeys.retry(conversationKey));
      const results = await (maxMessages > 1 ? read.get(redisKeys.typing(conversationKey)) : read).exec();
      const [rangeResult, stateResult, typingResult] = results ?? [];
      if (rangeResult?.[0]) throw rangeResult[0];
      return headBatch(conversationKey, maxMessages, (rangeResult?.[1] ?? []) as string[], stateResult?.[1], typingResult?.[1]);
    },

    async lockAndBatch(conversationKey, maxMessages, lock) {
      // The queued mark goes once a job tried the lock: a message appended after that finds the
      // lock held (its holder reads on), or adds a job of its own.
      const read = redis
        .pipeline()
        .set(lock.key, lock.token, 'PX', lock.ttlMs, 'NX', 'GET')
        .del(redisKeys.queued(conversationKey))
        .lrange(redisKeys.inbox(conversationKey), 0, MAX_BATCH_MESSAGES - 1)
        .hgetall(redisKeys.retry(conversationKey));
      const results = await (maxMessages > 1 ? read.get(redisKeys.typing(conversationKey)) : read).exec();
      const [setResult, , rangeResult, stateResult, typingResult] = results ?? [];
      if (setResult?.[0]) throw setResult[0];
      return {
        acquired: lockTaken(setResult?.[1], lock.token),
        batch: () => {
          if (rangeResult?.[0]) throw rangeResult[0];
          return headBatch(conversationKey, maxMessages, (rangeResult?.[1] ?? []) as string[], stateResult?.[1], typingResult?.[1]);
        },
      };
    },

    async acknowledge(conversationKey, batch, lockToken) {
      const [popped] = await acknowledgeScript(conversationKey, batch, lockToken ?? '', 0);
      return popped === 2;
    },

    async acknowledgeAndBatch(conversationKey, batch, lockToken, maxMessages, keepsWait) {
      const [popped, raws, state, typing] = await acknowledgeScript(conversationKey, batch, lockToken, maxMessages, keepsWait);
      if (popped === 2) return { released: true };
      // Not the head any more (only a holder that lost the lock): nothing was read.
      if (popped !== 1 || !Array.isArray(raws)) return { released: false };
      const entries = raws.filter((raw): raw is string => typeof raw === 'string');
      const stored: Record<string, string> = {};
      if (Array.isArray(state)) for (let index = 0; index + 1 < state.length; index += 2) stored[String(state[index])] = String(state[index + 1]);
      return { released: false, batch: () => headBatch(conversationKey, maxMessages, entries, stored, typing) };
    },

    async discardHead(conversationKey) {
      await redis.multi().lpop(redisKeys.inbox(conversationKey)).del(redisKeys.retry(conversationKey)).exec();
    },

    size(conversationKey) {
      return redis.llen(redisKeys.inbox(conversationKey));
    },

    ...createInboxTurnState(redis),
  };
}
