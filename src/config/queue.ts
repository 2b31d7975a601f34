/** The turns queue and its worker: concurrency, the conversation lock, coalescing, shutdown, retries. */
import { z } from 'zod';
import { positiveInt } from './fields.js';

export const queueFields = {
  WORKER_CONCURRENCY: positiveInt(32),
  // Turns and recovery: a killed worker's conversation is taken over within about 1⅓ TTL (the
  // lock and BullMQ's job lock share it). A message's turn starts at once; COALESCE_MS is the
  // quiet period that ends a burst (a turn started over for a message arriving before its reply
  // left waits until the newest message is that old, and a WhatsApp reply is held until then; a
  // widget visitor's typing report stands that long). Per channel: COALESCE_MS_WEB and
  // COALESCE_MS_WHATSAPP, each falling back to COALESCE_MS (0: one turn per message).
  TURN_LOCK_TTL_MS: z.coerce
    .number({ error: 'expected 1500–60000 ms' })
    .int()
    .min(1500, 'expected 1500–60000 ms')
    .max(60_000, 'expected 1500–60000 ms')
    .default(5_000),
  COALESCE_MS: z.coerce.number({ error: 'expected 0–10000 ms' }).int().min(0, 'expected 0–10000 ms').max(10_000, 'expected 0–10000 ms').default(1_500),
  COALESCE_MS_WEB: z.coerce.number({ error: 'expected 0–10000 ms' }).int().min(0, 'expected 0–10000 ms').max(10_000, 'expected 0–10000 ms').optional(),
  COALESCE_MS_WHATSAPP: z.coerce.number({ error: 'expected 0–10000 ms' }).int().min(0, 'expected 0–10000 ms').max(10_000, 'expected 0–10000 ms').optional(),
  // Longer than one model call, so a SIGTERM lets an in-flight turn finish.
  SHUTDOWN_TIMEOUT_MS: positiveInt(50_000),
  // A message is given up on (apology, recorded failed, counted) only once its conversation's budget is spent.
  MESSAGE_RETRY_BUDGET_MS: positiveInt(600_000),
  MESSAGE_RETRY_BACKOFF_MS: positiveInt(2_000),
};

export interface WorkerConfig {
  concurrency: number;
  lockTtlMs: number;
  coalesceMs: number;
  /** The quiet period per channel (COALESCE_MS_WEB, COALESCE_MS_WHATSAPP; each COALESCE_MS unless set). */
  channelCoalesceMs: { web: number; whatsapp: number };
  shutdownTimeoutMs: number;
  retryBudgetMs: number;
  retryBackoffMs: number;
}

type QueueEnv = z.infer<z.ZodObject<typeof queueFields>>;

export const workerConfig = (env: QueueEnv): WorkerConfig => ({
  concurrency: env.WORKER_CONCURRENCY,
  lockTtlMs: env.TURN_LOCK_TTL_MS,
  coalesceMs: env.COALESCE_MS,
  channelCoalesceMs: { web: env.COALESCE_MS_WEB ?? env.COALESCE_MS, whatsapp: env.COALESCE_MS_WHATSAPP ?? env.COALESCE_MS },
  shutdownTimeoutMs: env.SHUTDOWN_TIMEOUT_MS,
  retryBudgetMs: env.MESSAGE_RETRY_BUDGET_MS,
  retryBackoffMs: env.MESSAGE_RETRY_BACKOFF_MS,
});
