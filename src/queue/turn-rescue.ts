/**
 * Rescuing the conversation of a job that failed for good (its attempts spent, or stalled too
 * often). Messages appended behind a held lock or a queued job add no job of their own, so
 * nothing else would come back to them: the batch whose turn the job kept failing in is given up
 * on (visibly, as any give-up), and a fresh job is left for whatever is still in the inbox.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Job } from 'bullmq';
import { CorruptInboxEntryError, type InboxBatch } from './conversation-inbox.js';
import { holdConversationLock, lockExpiresInMs, lockRequest, type HeldLock } from './conversation-lock.js';
import type { TurnContext } from './turn-context.js';
import { giveUpHeld } from './turn-give-up.js';
import type { TurnJob } from './turn-queue.js';
import { MAX_SUSPECT_ATTEMPTS } from './turn-retry.js';

/** Tries at rescuing a conversation whose job failed for good (Redis may be what failed it), a doubling delay apart. */
const RESCUE_ATTEMPTS = 8;

/** `giveUpFailedHead` gave up on the head and its acknowledgement emptied the inbox and freed the lock: nothing is left to rescue. */
const RELEASED = Symbol('released');

/**
 * After a job of the conversation failed for good. The messages behind its batch added no job
 * of their own (they rode on it), so nothing else would come back to them: give up on the batch
 * whose turn the job kept failing in (`failedHead`; visibly, as any give-up), then leave a fresh
 * job for whatever is left. A job that failed outside a turn (or stalled too often) counts as
 * an unknown failure of the head (given up on after MAX_SUSPECT_ATTEMPTS such), and the fresh
 * job tries the head again once its retry delay has passed. A rescue that fails (Redis may be
 * what failed the job) is tried again, RESCUE_ATTEMPTS times a doubling delay apart, unless the
 * process stops. Never throws.
 */
export async function rescue(context: TurnContext, job: Job<TurnJob>, conversationKey: string, failedHead: string | undefined, error: unknown): Promise<void> {
  const { logger, shutdown } = context.options;
  for (let attempt = 1; ; attempt += 1) {
    try {
      await rescueOnce(context, job, conversationKey, failedHead, error);
      return;
    } catch (rescueError) {
      const last = attempt >= RESCUE_ATTEMPTS || shutdown.aborted;
      logger.error(last ? 'turn-job-rescue-failed' : 'turn-job-rescue-retrying', { conversationKey, failedJobId: job.id, attempt, error: rescueError });
      if (last) return;
      try {
        await sleep(context.policy.firstDelayMs * 2 ** (attempt - 1), undefined, { signal: shutdown });
      } catch {
        return;
      }
    }
  }
}

/** One try at `rescue`. */
async function rescueOnce(context: TurnContext, job: Job<TurnJob>, conversationKey: string, failedHead: string | undefined, error: unknown): Promise<void> {
  const { inbox, redis, logger, queue, lockTtlMs } = context.options;
  const request = lockRequest(conversationKey, lockTtlMs);
  const first = await inbox.lockAndBatch(conversationKey, context.maxBatch, request);
  let delay = 0;
  let gaveUp: string | undefined;
  if (first.acquired) {
    const lock = holdConversationLock(redis, request, () => logger.warn('conversation-lock-lost', { conversationKey }));
    try {
      const outcome = await giveUpFailedHead(context, job, conversationKey, first.batch, failedHead, error, lock);
      if (outcome === RELEASED) return;
      gaveUp = outcome;
    } finally {
      await lock.release();
    }
    // Re-checked after releasing: a message appended while this held the lock added no job.
    if ((await inbox.size(conversationKey)) === 0) return;
  } else {
    // Its holder answers the inbox before it lets go; a dead holder's lock expires first.
    delay = (await lockExpiresInMs(redis, conversationKey)) + 50;
  }
  const jobId = `rescue|${conversationKey}|${Date.now()}`.replace(/:/g, '_');
  await queue.add('turn', { conversationKey, messageId: failedHead ?? job.data.messageId }, { jobId, delay });
  logger.warn('turn-job-rescued', { conversationKey, failedJobId: job.id, gaveUp, jobId });
}

/**
 * Under the lock: gives up on the head if its turn is the one the job kept failing in, or it has
 * now failed MAX_SUSPECT_ATTEMPTS times outside a turn; returns its message id when it did
 * (RELEASED when that left the inbox empty and the lock free).
 */
async function giveUpFailedHead(
  context: TurnContext,
  job: Job<TurnJob>,
  conversationKey: string,
  read: () => InboxBatch | undefined,
  failedHead: string | undefined,
  error: unknown,
  lock: HeldLock,
): Promise<string | typeof RELEASED | undefined> {
  const { inbox, logger } = context.options;
  let batch: InboxBatch | undefined;
  try {
    batch = read();
  } catch (readError) {
    // A corrupt head is discarded by the fresh job's drain.
    if (!(readError instanceof CorruptInboxEntryError)) throw readError;
  }
  const head = batch?.entries[0].message;
  // A job that failed outside a turn (or stalled too often: maybe its head kills the worker)
  // counts against the head as an unknown failure would, so no head is retried forever.
  const suspect =
    head && failedHead === undefined
      ? await inbox.recordFailure(conversationKey, head.messageId, { ...context.policy, suspect: true, now: Date.now() })
      : undefined;
  if (!batch || !head || (head.messageId !== failedHead && (suspect?.suspectAttempts ?? 0) < MAX_SUSPECT_ATTEMPTS)) return undefined;
  // Only what its turn answered: an unfrozen batch's later messages were never in one.
  const failed: InboxBatch = batch.frozen ? batch : { ...batch, entries: [batch.entries[0]] };
  // The decision is stored first: nothing but the fresh job below would come back to this
  // conversation, so a lock lost on the way leaves the give-up for that job's holder to
  // finish (the apology through the send ledger, once), never the head answered again.
  await giveUpHeld(context, conversationKey, failed, { reason: 'unknown', error, attempts: suspect?.attempts ?? job.attemptsMade }, () => {
    if (!lock.held) throw new Error(`lost the lock of ${conversationKey}`);
  });
  if (!lock.held) {
    logger.warn('turn-job-rescue-lock-lost', { conversationKey, failedJobId: job.id, messageId: head.messageId });
    return head.messageId;
  }
  const freed = await lock.releaseWith(async (token) => {
    const released = await inbox.acknowledge(conversationKey, suspect ? { ...failed, retry: suspect } : failed, token);
    return { released, value: released };
  });
  return freed ? RELEASED : head.messageId;
}
