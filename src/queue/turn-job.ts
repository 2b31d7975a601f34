/**
 * One turn job, from pickup to its end: it drains its conversation (`turn-drain.ts`) until the
 * inbox is empty and decides, by what the drain came to, whether the job completes or comes
 * back later (moved to delayed, no attempt counted): a busy conversation is its holder's (but a
 * re-drive or holding job, or a recovered or retried job finding a lock maybe nobody holds, comes
 * back), a batch in its quiet period is due later, a stopping worker hands the job back, a failed
 * head not yet due is its re-drive job's.
 */
import { DelayedError, type Job } from 'bullmq';
import { lockExpiresInMs } from './conversation-lock.js';
import type { TurnContext } from './turn-context.js';
import { drain } from './turn-drain.js';
import { TurnJobSchema, type TurnJob } from './turn-queue.js';
import { HOLDING_JOB, REDRIVE_JOB } from './turn-retry.js';

/** Puts the job back in the queue, due at `at`, without counting an attempt. */
async function comeBackAt(job: Job<TurnJob>, token: string | undefined, at: number): Promise<never> {
  await job.moveToDelayed(at, token);
  throw new DelayedError();
}

/** The worker's processor: runs job `job` (BullMQ's lock `token`). */
export async function processTurn(context: TurnContext, job: Job<TurnJob>, token?: string): Promise<void> {
  const { redis, inbox, logger, metrics, shutdown } = context.options;
  const parsed = TurnJobSchema.safeParse(job.data);
  if (!parsed.success) {
    logger.error('job-malformed', { jobId: job.id });
    return;
  }
  const { conversationKey, messageId, attempt } = parsed.data;
  const holding = job.name === HOLDING_JOB && attempt !== undefined ? { messageId, attempt } : undefined;
  // Queue wait of the job's first pickup (later pickups are re-drives and busy re-polls).
  if (job.attemptsStarted <= 1)
    metrics.observe('queue_wait_seconds', { queue: 'turns' }, Math.max(0, Date.now() - job.timestamp - (job.opts.delay ?? 0)) / 1000);
  // The holder re-checks the inbox after releasing, so a message that arrived meanwhile is
  // answered by it. A stopping worker hands its job back for the next worker.
  for (;;) {
    if (shutdown.aborted) return comeBackAt(job, token, Date.now() + context.busyDelayMs);
    const outcome = await drain(context, conversationKey, job.id, holding);
    if (outcome.kind === 'busy') {
      // The holder re-checks the inbox after releasing, so it answers this job's message too;
      // a holder that dies leaves its own job active, and the stall check runs it again.
      // Completing here (rather than coming back) costs a burst no extra job cycles.
      metrics.increment('turn_lock_busy_total');
      // That recovered job may find the dead holder's lock not yet expired (the two locks are
      // renewed apart): it comes back as it expires rather than leave the conversation to nobody.
      // So does a job whose last attempt failed (Redis unreachable mid-drain): the lock it finds
      // may be the one that attempt took and could not free, which nobody holds any more.
      if (job.stalledCounter > 0 || job.attemptsMade > 0) return comeBackAt(job, token, Date.now() + (await lockExpiresInMs(redis, conversationKey)) + 50);
      // A re-drive job is the one job a failed head waits for: a holder that found the head not
      // yet due left it to this job and completed, so this job never completes on a busy lock.
      // Nor does a holding job: no other job sends its message while the head waits.
      if (job.name === REDRIVE_JOB || holding) {
        logger.debug('turn-lock-busy-redrive', { conversationKey, jobId: job.id });
        return comeBackAt(job, token, Date.now() + Math.min(context.busyDelayMs, (await lockExpiresInMs(redis, conversationKey)) + 50));
      }
      return;
    }
    // The quiet period: come back when the batch is due (any job of the burst may be the one).
    if (outcome.kind === 'quiet') return comeBackAt(job, token, outcome.at);
    if (outcome.kind === 'stopped') {
      logger.info('turn-job-handed-back', { conversationKey });
      return comeBackAt(job, token, Date.now() + context.busyDelayMs);
    }
    if (outcome.kind === 'waiting') {
      // The re-drive job of this attempt comes back when it is due (it can't re-add itself);
      // any other job leaves the message to it.
      if (job.id === outcome.redriveId) return comeBackAt(job, token, outcome.at);
      return;
    }
    if (outcome.released || (await inbox.size(conversationKey)) === 0) return;
  }
}
