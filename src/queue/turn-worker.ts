/**
 * The BullMQ worker that runs turns. For each job it takes the conversation's lock, then
 * answers the conversation's inbox from the head until it is empty — so one conversation's
 * turns run one at a time, in arrival order, while other conversations run concurrently.
 * A job that finds the lock taken leaves its message to the holder (see `process`).
 */
import { Worker, type ConnectionOptions, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { InboundMessage } from '../orchestrator/contracts.js';
import { CorruptInboxEntryError, type ConversationInbox } from './conversation-inbox.js';
import { acquireConversationLock } from './conversation-lock.js';
import { TURN_QUEUE_NAME, TurnJobSchema, type TurnJob } from './turn-queue.js';

/** Attempts at one inbound message before it is given up on (logged, counted) so later ones can run. */
export const MAX_MESSAGE_ATTEMPTS = 8;

export type InboundHandler = (message: InboundMessage, signal: AbortSignal) => Promise<void>;

export interface TurnWorkerOptions {
  connection: ConnectionOptions;
  redis: Redis;
  inbox: ConversationInbox;
  handle: InboundHandler;
  logger: Logger;
  metrics: Metrics;
  concurrency: number;
  lockTtlMs: number;
  prefix?: string;
}

export function createTurnWorker(options: TurnWorkerOptions): Worker<TurnJob> {
  const { redis, inbox, handle, logger, metrics } = options;

  /** Answers the conversation's inbox from the head until it is empty, under its lock. */
  const drain = async (conversationKey: string): Promise<'drained' | 'busy'> => {
    const abort = new AbortController();
    const lock = await acquireConversationLock(redis, conversationKey, options.lockTtlMs, () => {
      logger.warn('conversation-lock-lost', { conversationKey });
      abort.abort(new Error('conversation lock lost'));
    });
    if (!lock) return 'busy';
    try {
      for (;;) {
        if (!lock.held) throw new Error(`lost the lock of ${conversationKey} mid-drain`);
        let message: InboundMessage | undefined;
        try {
          message = await inbox.head(conversationKey);
        } catch (error) {
          if (!(error instanceof CorruptInboxEntryError)) throw error;
          logger.error('inbox-entry-discarded', { conversationKey, error });
          metrics.increment('inbox_corrupt_total');
          await inbox.discardHead(conversationKey);
          continue;
        }
        if (!message) return 'drained';
        try {
          await handle(message, abort.signal);
        } catch (error) {
          // A message that keeps failing must not block its conversation for ever.
          const attempts = await inbox.recordFailure(conversationKey, message.messageId);
          if (attempts < MAX_MESSAGE_ATTEMPTS || abort.signal.aborted) throw error;
          metrics.increment('inbound_abandoned_total', { channel: message.channel });
          logger.error('inbound-abandoned', { conversationKey, messageId: message.messageId, attempts, error });
        }
        await inbox.acknowledge(conversationKey, message.messageId);
      }
    } finally {
      await lock.release();
    }
  };

  const process = async (job: Job<TurnJob>): Promise<void> => {
    const parsed = TurnJobSchema.safeParse(job.data);
    if (!parsed.success) {
      logger.error('job-malformed', { jobId: job.id });
      return;
    }
    const { conversationKey } = parsed.data;
    // A job that finds the lock taken completes at once: its message is already in the inbox,
    // and the holder re-checks the inbox after releasing, so it answers that message too (or
    // the next holder does). A holder that dies keeps its own job active, which the queue's
    // stall check retries — and that retry drains everything left behind.
    for (;;) {
      if ((await drain(conversationKey)) === 'busy') {
        metrics.increment('turn_lock_busy_total');
        return;
      }
      if ((await inbox.size(conversationKey)) === 0) return;
    }
  };

  const worker = new Worker<TurnJob>(TURN_QUEUE_NAME, process, {
    connection: options.connection,
    ...(options.prefix ? { prefix: options.prefix } : {}),
    concurrency: options.concurrency,
    lockDuration: options.lockTtlMs,
    stalledInterval: Math.max(1000, Math.floor(options.lockTtlMs / 2)),
    maxStalledCount: 3,
    autorun: true,
  });
  worker.on('failed', (job, error) => {
    metrics.increment('turn_job_failed_total');
    logger.error('turn-job-failed', { jobId: job?.id, attempts: job?.attemptsMade, error });
  });
  worker.on('error', (error) => logger.error('worker-error', { error }));
  return worker;
}
