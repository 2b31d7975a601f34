/**
 * The BullMQ worker that runs turns. For each job it takes the conversation's lock, then
 * answers the conversation's inbox from the head until it is empty — so one conversation's
 * turns run one at a time, in arrival order, while other conversations run concurrently.
 *
 * Retries are per message and by time, counted in one place (the inbox's retry state of its
 * head): a failed head is tried again after a doubling delay by a delayed "re-drive" job, and
 * no other job touches it before then, so sibling jobs can't use up its attempts. An outage
 * (classifyFailure: infrastructure) is retried until the message's own budget is spent; a
 * deterministic failure is given up on at once; an unknown one after a few attempts. Giving up
 * is never silent (see `giveUp`). A job that finds the lock taken completes: the holder
 * re-checks the inbox after releasing, and a dead holder's own job is re-run by the queue's
 * stall check. A stopping worker finishes the turn it holds and starts no new one: its job goes
 * back to the queue for the next worker.
 */
import { DelayedError, Worker, type ConnectionOptions, type Job } from 'bullmq';
import type { RedisClient } from '../redis.js';
import { classifyFailure, type FailureKind } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { InboundMessage } from '../contracts/index.js';
import { CorruptInboxEntryError, type ConversationInbox, type InboxHead } from './conversation-inbox.js';
import { acquireConversationLock } from './conversation-lock.js';
import { TURN_QUEUE_NAME, TurnJobSchema, type TurnJob, type TurnQueue } from './turn-queue.js';

/** Attempts at a message failing for an unknown reason (likely a bug) before it is given up on. */
const MAX_SUSPECT_ATTEMPTS = 3;

export type InboundHandler = (message: InboundMessage, signal: AbortSignal) => Promise<void>;

/** Why a message was given up on: `budget` (its retry time ran out) or the failure kind. */
export type GiveUpReason = 'budget' | Exclude<FailureKind, 'infrastructure'>;

/** Tells the customer and the operator that a message will not be answered. Never throws. */
export type GiveUpHandler = (message: InboundMessage, failure: { reason: GiveUpReason; error: unknown; attempts: number }) => Promise<void>;

export interface TurnWorkerOptions {
  connection: ConnectionOptions;
  redis: RedisClient;
  inbox: ConversationInbox;
  /** Where re-drive jobs are added (the same queue the worker consumes). */
  queue: TurnQueue;
  handle: InboundHandler;
  giveUp: GiveUpHandler;
  logger: Logger;
  metrics: Metrics;
  concurrency: number;
  lockTtlMs: number;
  /** How long a message is retried from its first failure before it is given up on. */
  retryBudgetMs: number;
  /** The first retry delay; it doubles up to a tenth of the budget. */
  retryBackoffMs: number;
  /** Aborted when the process begins shutting down: no new turn starts after it. */
  shutdown: AbortSignal;
  prefix?: string;
}

type DrainOutcome =
  | { kind: 'drained' }
  | { kind: 'busy' }
  | { kind: 'stopped' }
  /** The head failed and is due again at `at`; the re-drive job `redriveId` exists for it. */
  | { kind: 'waiting'; at: number; redriveId: string };

const redriveJobId = (conversationKey: string, messageId: string, attempt: number) => `redrive|${conversationKey}|${messageId}|${attempt}`.replace(/:/g, '_');

export function createTurnWorker(options: TurnWorkerOptions): Worker<TurnJob> {
  const { redis, inbox, handle, giveUp, logger, metrics, shutdown } = options;
  const policy = { firstDelayMs: options.retryBackoffMs, maxDelayMs: Math.max(options.retryBackoffMs, Math.floor(options.retryBudgetMs / 10)) };
  const busyDelayMs = Math.max(250, Math.floor(options.lockTtlMs / 3));

  const ensureRedrive = async (conversationKey: string, messageId: string, attempt: number, at: number): Promise<DrainOutcome> => {
    const redriveId = redriveJobId(conversationKey, messageId, attempt);
    // Idempotent: adding an existing job id is a no-op.
    await options.queue.add('redrive', { conversationKey, messageId }, { jobId: redriveId, delay: Math.max(0, at - Date.now()) });
    return { kind: 'waiting', at, redriveId };
  };

  /** Handles a failed head: schedules its next attempt (`waiting`), or gives up on it (`given-up`). */
  const onFailure = async (conversationKey: string, head: InboxHead, error: unknown): Promise<DrainOutcome | 'given-up'> => {
    const { message } = head;
    const kind = classifyFailure(error);
    const now = Date.now();
    const state = await inbox.recordFailure(conversationKey, message.messageId, { ...policy, suspect: kind === 'unknown', now });
    const budgetSpent = now - state.firstFailureAt >= options.retryBudgetMs;
    const reason: GiveUpReason | undefined =
      kind === 'deterministic'
        ? 'deterministic'
        : kind === 'unknown' && state.suspectAttempts >= MAX_SUSPECT_ATTEMPTS
          ? 'unknown'
          : budgetSpent
            ? 'budget'
            : undefined;
    if (reason) {
      await giveUp(message, { reason, error, attempts: state.attempts });
      return 'given-up';
    }
    const waiting = await ensureRedrive(conversationKey, message.messageId, state.attempts, state.nextAttemptAt);
    metrics.increment('inbound_retries_total', { channel: message.channel, kind });
    logger.warn('inbound-retrying', {
      conversationKey,
      messageId: message.messageId,
      kind,
      attempts: state.attempts,
      retryInMs: state.nextAttemptAt - now,
      budgetLeftMs: options.retryBudgetMs - (now - state.firstFailureAt),
      error,
    });
    return waiting;
  };

  /** Answers the conversation's inbox from the head until it is empty, under its lock. */
  const drain = async (conversationKey: string): Promise<DrainOutcome> => {
    const abort = new AbortController();
    const lock = await acquireConversationLock(redis, conversationKey, options.lockTtlMs, () => {
      logger.warn('conversation-lock-lost', { conversationKey });
      abort.abort(new Error('conversation lock lost'));
    });
    if (!lock) return { kind: 'busy' };
    try {
      for (;;) {
        if (shutdown.aborted) return { kind: 'stopped' };
        if (!lock.held) throw new Error(`lost the lock of ${conversationKey} mid-drain`);
        let head: InboxHead | undefined;
        try {
          head = await inbox.head(conversationKey);
        } catch (error) {
          if (!(error instanceof CorruptInboxEntryError)) throw error;
          logger.error('inbox-entry-discarded', { conversationKey, error });
          metrics.increment('inbox_corrupt_total');
          await inbox.discardHead(conversationKey);
          continue;
        }
        if (!head) return { kind: 'drained' };
        if (head.retry && head.retry.nextAttemptAt > Date.now()) {
          return ensureRedrive(conversationKey, head.message.messageId, head.retry.attempts, head.retry.nextAttemptAt);
        }
        try {
          await handle(head.message, abort.signal);
        } catch (error) {
          // A turn cut short by a lost lock is the next holder's to retry: nothing is counted.
          if (abort.signal.aborted) throw error;
          const outcome = await onFailure(conversationKey, head, error);
          if (outcome !== 'given-up') return outcome;
        }
        await inbox.acknowledge(conversationKey, head);
        logger.debug('inbound-acknowledged', { conversationKey, messageId: head.message.messageId });
      }
    } finally {
      await lock.release();
    }
  };

  /** Puts the job back in the queue, due at `at`, without counting an attempt. */
  const comeBackAt = async (job: Job<TurnJob>, token: string | undefined, at: number): Promise<never> => {
    await job.moveToDelayed(at, token);
    throw new DelayedError();
  };

  const processTurn = async (job: Job<TurnJob>, token?: string): Promise<void> => {
    const parsed = TurnJobSchema.safeParse(job.data);
    if (!parsed.success) {
      logger.error('job-malformed', { jobId: job.id });
      return;
    }
    const { conversationKey } = parsed.data;
    // Queue wait of the job's first pickup (later pickups are re-drives and busy re-polls).
    if (job.attemptsStarted <= 1)
      metrics.observe('queue_wait_seconds', { queue: 'turns' }, Math.max(0, Date.now() - job.timestamp - (job.opts.delay ?? 0)) / 1000);
    // The holder re-checks the inbox after releasing, so a message that arrived meanwhile is
    // answered by it. A stopping worker hands its job back for the next worker.
    for (;;) {
      if (shutdown.aborted) return comeBackAt(job, token, Date.now() + busyDelayMs);
      const outcome = await drain(conversationKey);
      if (outcome.kind === 'busy') {
        // The holder re-checks the inbox after releasing, so it answers this job's message too;
        // a holder that dies leaves its own job active, and the stall check runs it again.
        // Completing here (rather than coming back) costs a burst no extra job cycles.
        metrics.increment('turn_lock_busy_total');
        return;
      }
      if (outcome.kind === 'stopped') {
        logger.info('turn-job-handed-back', { conversationKey });
        return comeBackAt(job, token, Date.now() + busyDelayMs);
      }
      if (outcome.kind === 'waiting') {
        // The re-drive job of this attempt comes back when it is due (it can't re-add itself);
        // any other job leaves the message to it.
        if (job.id === outcome.redriveId) return comeBackAt(job, token, outcome.at);
        return;
      }
      if ((await inbox.size(conversationKey)) === 0) return;
    }
  };

  const worker = new Worker<TurnJob>(TURN_QUEUE_NAME, processTurn, {
    connection: options.connection,
    ...(options.prefix ? { prefix: options.prefix } : {}),
    concurrency: options.concurrency,
    lockDuration: options.lockTtlMs,
    stalledInterval: Math.max(1000, Math.floor(options.lockTtlMs / 2)),
    // A holder killed mid-turn leaves its job active: the stall check runs it again, so a
    // conversation is only abandoned to the next message after this many kills in a row.
    maxStalledCount: 10,
    autorun: true,
  });
  worker.on('failed', (job, error) => {
    metrics.increment('turn_job_failed_total');
    logger.error('turn-job-failed', { jobId: job?.id, attempts: job?.attemptsMade, error });
  });
  worker.on('error', (error) => logger.error('worker-error', { error }));
  return worker;
}
