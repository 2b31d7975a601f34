/**
 * A takeover nobody answers hands back by itself: every teammate message (and the takeover
 * itself) schedules a delayed BullMQ job for `TAKEOVER_IDLE_MINUTES` later; when it fires, the
 * Redis mirror says whether the holder wrote since (then a later job owns the check) or not
 * (then the conversation is handed back with reason `idle`, which tells customer and teammate).
 * A job id per hand-off and message time keeps re-adds idempotent.
 */
import { Queue, Worker, type ConnectionOptions, type Job } from 'bullmq';
import { z } from 'zod';
import type { Logger } from '../logger.js';
import type { TakeoverStateStore, TakeoverState } from './takeover-state.js';
import type { TakeoverService } from './takeover.js';

const IDLE_QUEUE_NAME = 'takeover-idle';

const IdleJobSchema = z.object({ conversationId: z.string().min(1), handoffId: z.string().min(1), lastTeammateAt: z.number().int() });
type IdleJob = z.infer<typeof IdleJobSchema>;

const IDLE_ACTOR = { id: 'system:idle', name: 'the assistant', via: 'system' } as const;

export function createIdleHandback(options: {
  connection: ConnectionOptions;
  prefix?: string;
  idleMs: number;
  state: TakeoverStateStore;
  service: () => TakeoverService;
  logger: Logger;
}) {
  const queue = new Queue<IdleJob>(IDLE_QUEUE_NAME, {
    connection: options.connection,
    ...(options.prefix ? { prefix: options.prefix } : {}),
    defaultJobOptions: { attempts: 5, backoff: { type: 'exponential', delay: 1000 }, removeOnComplete: true, removeOnFail: { age: 24 * 60 * 60 } },
  });
  let worker: Worker<IdleJob> | undefined;

  const schedule = async (state: Pick<TakeoverState, 'conversationId' | 'handoffId' | 'lastTeammateAt'>, delayMs = options.idleMs) => {
    const data: IdleJob = { conversationId: state.conversationId, handoffId: state.handoffId, lastTeammateAt: state.lastTeammateAt };
    await queue.add('idle', data, { delay: Math.max(0, delayMs), jobId: `${state.handoffId}_${state.lastTeammateAt}` });
  };

  const check = async (job: Job<IdleJob>) => {
    const parsed = IdleJobSchema.safeParse(job.data);
    if (!parsed.success) {
      options.logger.error('takeover-idle-job-malformed', { jobId: job.id });
      return;
    }
    const { conversationId, handoffId, lastTeammateAt } = parsed.data;
    const current = await options.state.get(conversationId);
    // Handed back already, or the holder wrote since: a later job owns the check.
    if (!current || current.handoffId !== handoffId || current.lastTeammateAt > lastTeammateAt) return;
    const quietFor = Date.now() - current.lastTeammateAt;
    if (quietFor < options.idleMs) {
      await schedule(current, options.idleMs - quietFor);
      return;
    }
    const result = await options.service().handBack({ handoffId, by: IDLE_ACTOR, reason: 'idle' });
    options.logger.info('takeover-idle-checked', { handoffId, conversationKey: conversationId, outcome: result.outcome, quietForMs: quietFor });
  };

  return {
    schedule: (state: TakeoverState) => schedule(state),
    start(): void {
      if (worker) return;
      worker = new Worker<IdleJob>(IDLE_QUEUE_NAME, check, {
        connection: options.connection,
        ...(options.prefix ? { prefix: options.prefix } : {}),
        concurrency: 4,
      });
      worker.on('error', (error) => options.logger.error('takeover-idle-worker-error', { error }));
    },
    async close(): Promise<void> {
      await worker?.close();
      await queue.close();
    },
  };
}
