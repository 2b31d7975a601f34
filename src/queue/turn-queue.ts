/**
 * The BullMQ queue between web and worker. A job only says "conversation X has a message";
 * the message itself waits in the conversation's inbox, which fixes the order. Job ids are the
 * channel's message id, so a retried webhook that slipped past dedupe still adds no job.
 */
import { Queue, type ConnectionOptions } from 'bullmq';
import { z } from 'zod';

export const TURN_QUEUE_NAME = 'turns';

export const TurnJobSchema = z.object({
  conversationKey: z.string().min(1),
  messageId: z.string().min(1),
  /** A holding job's: the failed attempt whose wait it tells the customer about (see turn-worker.ts). */
  attempt: z.number().int().positive().optional(),
});
export type TurnJob = z.infer<typeof TurnJobSchema>;

export type TurnQueue = Queue<TurnJob>;

/** `retryBackoffMs`: the first delay before a job's bookkeeping is tried again (it doubles; MESSAGE_RETRY_BACKOFF_MS). */
export function createTurnQueue(connection: ConnectionOptions, prefix?: string, retryBackoffMs = 2000): TurnQueue {
  return new Queue<TurnJob>(TURN_QUEUE_NAME, {
    connection,
    ...(prefix ? { prefix } : {}),
    defaultJobOptions: {
      // A failing message is retried by re-drive jobs (turn-worker.ts); these attempts only
      // cover the worker's own bookkeeping failing (e.g. Redis unreachable mid-drain); a job that
      // fails for good leaves a fresh one for its conversation's inbox (turn-worker.ts, `rescue`).
      attempts: 8,
      backoff: { type: 'exponential', delay: retryBackoffMs },
      // Completed job ids are kept a day so a late Twilio retry cannot enqueue a second job.
      removeOnComplete: { age: 24 * 60 * 60, count: 100_000 },
      removeOnFail: { age: 7 * 24 * 60 * 60 },
    },
  });
}

/** `idPrefix` (e.g. `sweep|`, the intake sweeper's) gives the message a job id of its own beside the intake's. */
export async function enqueueTurn(queue: TurnQueue, job: TurnJob, idPrefix = ''): Promise<void> {
  await queue.add('turn', job, { jobId: `${idPrefix}${job.conversationKey}|${job.messageId}`.replace(/:/g, '_') });
}
