/**
 * The quiet checks of the satisfaction question: after each answered turn a delayed job on the
 * `csat` BullMQ queue (debounced: one per conversation, each reply replacing it with its own time
 * and delay), run CSAT_AFTER_MINUTES later by a worker that asks the conversation's customer only
 * if nothing happened since (`csat.ts` decides). A job is best effort: a failed check is not retried.
 */
import { Queue, Worker, type ConnectionOptions, type Job } from 'bullmq';
import { createHmac } from 'node:crypto';
import { z } from 'zod';
import type { Logger } from '../logger.js';

const CSAT_QUEUE_NAME = 'csat';

const QuietJobSchema = z.object({ conversationKey: z.string().min(1), at: z.number().int().nonnegative() });
type QuietJob = z.infer<typeof QuietJobSchema>;

interface CsatQueueOptions {
  connection: ConnectionOptions;
  prefix?: string;
}

/** The key a conversation's job id is hashed with: the id names the conversation without letting anyone holding the number recompute it. */
interface JobKey {
  jobKey: string;
}

export function createCsatQueue(options: CsatQueueOptions & JobKey) {
  const queue = new Queue<QuietJob>(CSAT_QUEUE_NAME, {
    connection: options.connection,
    ...(options.prefix ? { prefix: options.prefix } : {}),
    defaultJobOptions: { attempts: 1, removeOnComplete: { age: 60 * 60 }, removeOnFail: { age: 24 * 60 * 60 } },
  });
  return {
    queue,
    async scheduleQuiet(conversationKey: string, at: number, delayMs: number): Promise<void> {
      const digest = createHmac('sha256', options.jobKey).update(conversationKey).digest('hex').slice(0, 24);
      // Debounced: one delayed job per conversation, replaced (data and delay) by each later reply.
      await queue.add(
        'quiet',
        { conversationKey, at },
        { delay: delayMs, deduplication: { id: `quiet_${digest}`, ttl: delayMs, extend: true, replace: true } },
      );
    },
    close: () => queue.close(),
  };
}

export function createCsatWorker(
  options: CsatQueueOptions & { quiet(conversationKey: string, at: number): Promise<unknown>; logger: Logger; concurrency?: number },
): Worker<QuietJob> {
  const worker = new Worker<QuietJob>(
    CSAT_QUEUE_NAME,
    async (job: Job<QuietJob>) => {
      const parsed = QuietJobSchema.safeParse(job.data);
      if (!parsed.success) {
        options.logger.error('csat-job-malformed', { jobId: job.id });
        return;
      }
      await options.quiet(parsed.data.conversationKey, parsed.data.at);
    },
    { connection: options.connection, ...(options.prefix ? { prefix: options.prefix } : {}), concurrency: options.concurrency ?? 4 },
  );
  worker.on('error', (error) => options.logger.error('csat-worker-error', { error }));
  worker.on('failed', (job, error) => options.logger.warn('csat-quiet-failed', { jobId: job?.id, error }));
  return worker;
}
