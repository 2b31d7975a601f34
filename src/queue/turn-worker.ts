/**
 * The BullMQ worker that runs turns. For each job it takes the conversation's lock, then
 * answers the conversation's inbox from the head until it is empty — so one conversation's
 * turns run one at a time, in arrival order, while other conversations run concurrently.
 *
 * Bursts are coalesced: one turn answers every message waiting at its head (up to
 * MAX_BATCH_MESSAGES), with one reply keyed to the last of them. A message costs no wait: its
 * turn starts as soon as it is read. With a quiet period (`coalesceMs`, per channel), a message
 * that arrives before anything of the turn has left (a tool run, streamed text, a stored reply)
 * starts it over once (`TurnGate`: the model call is aborted) with the grown batch; that second
 * turn waits until the newest message is `coalesceMs` old (the job comes back when it is due,
 * holding neither a worker slot nor the lock) and is never started over again. A channel that
 * does not stream holds its reply until the batch's newest message is `coalesceMs` old; any
 * channel holds it while the customer reports typing. Once a turn starts, its batch is frozen in
 * the inbox, so a retry (or the next worker after a crash) answers exactly the same messages and
 * resumes the same reply. `coalesceMs` 0 turns it off: one turn per message.
 *
 * A killed worker's conversation is answered again within about one lock TTL plus a stall
 * check: the conversation lock and BullMQ's job lock share the TTL and are renewed every third
 * of it, and the stall check runs every second. A recovered job that still finds the dead
 * holder's lock comes back as it expires instead of completing.
 *
 * Retries are per message and by time, counted in one place (the inbox's retry state of its
 * head): a failed head is tried again after a doubling delay by a delayed "re-drive" job, and
 * no other job touches it before then, so sibling jobs can't use up its attempts. An outage
 * (classifyFailure: infrastructure) is retried until the message's own budget is spent; a
 * deterministic failure is given up on at once; an unknown one after a few attempts. Giving up
 * is never silent (see `giveUp`). While a failed head waits, the customer may be told so
 * (`holding`: a model outage's holding message): decided where its next attempt is scheduled,
 * sent then if it is due, or by a delayed "holding" job at its time when the next attempt would
 * start later. A job that finds the lock taken completes: the holder frees the lock only in the
 * step that acknowledges the inbox's last message (or re-checks the inbox after releasing
 * otherwise), and a dead holder's own job is re-run by the queue's stall check. A stopping worker finishes the turn it holds and starts no new one: its job goes
 * back to the queue for the next worker.
 *
 * Messages appended behind a held lock or a queued job add no job of their own, so a job that
 * fails for good (its attempts spent, or stalled too often) must not take them down with it: it
 * gives up on the batch whose turn it kept failing (visibly, as any give-up) and leaves a fresh
 * job for whatever is still in the inbox (see `rescue`).
 *
 * Its steps, one file each (see docs/architecture.md, "The turn worker's steps"): the job
 * (`turn-job.ts`), claim (`turn-claim.ts`), drain (`turn-drain.ts`), the batch's turn
 * (`turn-batch.ts`), restart on a new message (`turn-restart.ts`), a failed turn's retry and
 * holding message (`turn-retry.ts`), give-up (`turn-give-up.ts`), crash accounting and
 * quarantine (`turn-quarantine.ts`) and rescue (`turn-rescue.ts`), sharing one `TurnContext`.
 */

import { Worker } from 'bullmq';
import { lockRenewIntervalMs } from './conversation-lock.js';
import { isSuspectChildProcess } from './suspect-child.js';
import { serveSuspectTurn } from './suspect-child-serve.js';
import { createTurnContext } from './turn-context.js';
import { processTurn } from './turn-job.js';
import { TURN_QUEUE_NAME, TurnJobSchema, type TurnJob } from './turn-queue.js';
import { rescue } from './turn-rescue.js';
import type { TurnWorkerOptions } from './turn-worker-types.js';

export type { TurnGate } from './turn-gate.js';
export type { GiveUpFailure, GiveUpHandler, HoldingNotice, InboundBatch, InboundHandler, TurnWorkerOptions } from './turn-worker-types.js';

export function createTurnWorker(options: TurnWorkerOptions): Worker<TurnJob> {
  const { logger, metrics } = options;
  const context = createTurnContext(options);
  // A suspect turn's child takes no job: it answers the one batch its worker hands it.
  const child = isSuspectChildProcess();
  if (child) serveSuspectTurn(options.handle, logger, options.warmUp);
  const worker = new Worker<TurnJob>(TURN_QUEUE_NAME, (job, token) => processTurn(context, job, token), {
    connection: options.connection,
    ...(options.prefix ? { prefix: options.prefix } : {}),
    concurrency: options.concurrency,
    // A killed worker's job is found stalled within a TTL plus one check (one script a second).
    lockDuration: options.lockTtlMs,
    lockRenewTime: lockRenewIntervalMs(options.lockTtlMs),
    stalledInterval: Math.min(1000, lockRenewIntervalMs(options.lockTtlMs)),
    // A holder killed mid-turn leaves its job active: the stall check runs it again, so a
    // conversation is only abandoned to the next message after this many kills in a row.
    maxStalledCount: 10,
    autorun: !child,
  });
  worker.on('failed', (job, error) => {
    metrics.increment('turn_job_failed_total');
    logger.error('turn-job-failed', { jobId: job?.id, attempts: job?.attemptsMade, error });
    if (!job?.id) return;
    const failedHead = context.failedHeads.get(job.id);
    context.failedHeads.delete(job.id);
    // Final (its attempts spent, or stalled too often): nothing else would come back to its inbox.
    const parsed = TurnJobSchema.safeParse(job.data);
    if (job.finishedOn !== undefined && parsed.success) void rescue(context, job, parsed.data.conversationKey, failedHead, error);
  });
  worker.on('error', (error) => logger.error('worker-error', { error }));
  worker.on('closed', () => {
    context.heartbeat.stop();
  });
  return worker;
}
