/**
 * What every step of the turn worker reads, built once per worker from its options: the retry
 * policy, the batch size, the quiet period per channel, this process's heartbeat, its solo-turn
 * slots, the fleet's suspect turn, its suspect turns' children, the conversations' waits, and the heads whose turn a job's
 * attempt failed in (read by `rescue` when that job fails for good). Each step is a function of
 * this context and its own per-drain state, passed explicitly.
 */
import { MAX_BATCH_MESSAGES, type InboxBatch, type RetryPolicy } from './conversation-inbox.js';
import { lockRenewIntervalMs } from './conversation-lock.js';
import { createConversationOutage, type ConversationOutage } from './conversation-outage.js';
import { createSoloTurns, type SoloTurns } from './solo-turns.js';
import { createSuspectChildren, type SuspectChildren } from './suspect-child.js';
import { createSuspectTurn, type SuspectTurn } from './suspect-turn.js';
import { startWorkerHeartbeat, type WorkerHeartbeat } from './worker-heartbeat.js';
import type { InboundBatch, TurnWorkerOptions } from './turn-worker-types.js';

export interface TurnContext {
  options: TurnWorkerOptions;
  /** The retry delays: the first (`retryBackoffMs`), doubling up to a tenth of the budget. */
  policy: RetryPolicy;
  /** How long a job that found the conversation busy (or a turn that may not start yet) stays away. */
  busyDelayMs: number;
  /** The most messages a turn answers: one unless some channel coalesces. */
  maxBatch: number;
  /** The quiet period of a channel (ms; 0: one turn per message). */
  coalesceFor(channel: string): number;
  heartbeat: WorkerHeartbeat;
  solo: SoloTurns;
  suspects: SuspectTurn;
  /** Suspect turns in child processes, where the process's entry allows it. */
  children: SuspectChildren;
  outage: ConversationOutage;
  /** The head whose turn a job's attempt failed in, until the `failed` event of that attempt reads it. */
  failedHeads: Map<string, string>;
}

export function createTurnContext(options: TurnWorkerOptions): TurnContext {
  const { redis, logger } = options;
  const heartbeat = startWorkerHeartbeat(redis, options.lockTtlMs, logger);
  return {
    options,
    policy: { firstDelayMs: options.retryBackoffMs, maxDelayMs: Math.max(options.retryBackoffMs, Math.floor(options.retryBudgetMs / 10)) },
    busyDelayMs: Math.max(250, lockRenewIntervalMs(options.lockTtlMs)),
    maxBatch: [options.coalesceMs, ...Object.values(options.channelCoalesceMs ?? {})].some((ms) => ms > 0) ? MAX_BATCH_MESSAGES : 1,
    coalesceFor: (channel) => options.channelCoalesceMs?.[channel] ?? options.coalesceMs,
    heartbeat,
    solo: createSoloTurns(),
    outage: createConversationOutage(redis),
    suspects: createSuspectTurn(redis, options.queue.qualifiedName, heartbeat.isDead),
    children: createSuspectChildren(),
    failedHeads: new Map(),
  };
}

/** The batch as its turn's handler sees it: the last message, the ones before it, guarded once a worker died in it. */
export const batchOf = ({ entries, crashes }: InboxBatch): InboundBatch => {
  const messages = entries.map((entry) => entry.message);
  return { message: messages.at(-1) ?? entries[0].message, earlier: messages.slice(0, -1), ...(crashes > 0 ? { guarded: true } : {}) };
};

/** Notes that job `jobId`'s attempt fails in the turn of the batch headed by `messageId`; returns the error. */
export function failedIn(context: TurnContext, jobId: string | undefined, messageId: string, error: unknown): unknown {
  if (jobId !== undefined) context.failedHeads.set(jobId, messageId);
  return error;
}
