/**
 * What the turn worker (`turn-worker.ts`) and its steps share with the rest of the service: the
 * batch a turn answers, the handlers the composition root gives it, its options, and what one
 * drain of a conversation comes to. No behaviour lives here.
 */
import type { ConnectionOptions } from 'bullmq';
import type { RedisClient } from '../redis.js';
import type { FailureKind } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { InboundMessage } from '../contracts/index.js';
import type { ConversationInbox } from './conversation-inbox.js';
import type { InboxNotices } from './inbox-notices.js';
import type { TurnQueue } from './turn-queue.js';
import type { TurnGate } from './turn-gate.js';

/** The messages one turn answers, in arrival order. */
export interface InboundBatch {
  /** The batch's last message: the turn's inbound, the one its reply is keyed to. */
  message: InboundMessage;
  /** The messages before it in the batch, oldest first (empty for a message answered alone). */
  earlier: readonly InboundMessage[];
  /**
   * A worker died in a turn on this batch before: answer it without what can exhaust a worker
   * (no media, a bounded prompt). Guarded turns run alone, in a child of their worker (or in the worker
   * itself where it can't fork one); one that kills that process quarantines the batch.
   */
  guarded?: boolean;
}

/**
 * Answers a batch. `signal` aborts the turn (lock lost, shutdown); `assertHeld` throws unless
 * this worker still surely holds the conversation: call it right before anything leaves. `gate`
 * (when the turn may be started over): `commit` before anything that must not happen twice.
 */
export type InboundHandler = (batch: InboundBatch, signal: AbortSignal, assertHeld: () => void, gate?: TurnGate) => Promise<void>;

/**
 * Why a message was given up on: `budget` (its retry time ran out), the failure kind, or
 * `poison` (a worker died running it alone: quarantined, never retried).
 */
export type GiveUpReason = 'budget' | 'poison' | Exclude<FailureKind, 'infrastructure'>;

/**
 * Tells the customer and the operator that a message will not be answered. `assertHeld` is the
 * lock's fence: it throws unless the worker still surely holds the conversation, and the
 * handler calls it before anything it writes or sends (a worker that lost the lock leaves the
 * batch to the next holder, which finds it marked given up). `apologised`: the customer already
 * had the apology of this wait (another batch's, see `conversation-outage.ts`): none is sent
 * again. Never throws.
 */
export type GiveUpHandler = (batch: InboundBatch, failure: GiveUpFailure, assertHeld: () => void) => Promise<void>;
export interface GiveUpFailure {
  reason: GiveUpReason;
  error: unknown;
  attempts: number;
  apologised?: boolean;
}

/**
 * What the customer hears while a failed batch waits for its next attempt (a model outage's
 * holding message). The worker decides when, where the attempt is scheduled: when the next
 * attempt would start at or after `dueAt`, `send` runs at `dueAt` (at once if that has passed),
 * under the conversation's lock and only while the batch still waits on that same failure (not
 * given up on, no attempt since); when the next attempt starts first, its own outcome decides.
 */
export interface HoldingNotice {
  /**
   * When the customer should hear about this failure (ms); undefined: never (not an outage, a
   * teammate's entry). `waitingSince`: when the conversation's oldest waiting message arrived. No I/O.
   */
  dueAt(batch: InboundBatch, error: unknown, waitingSince: number): number | undefined;
  /** Tells the customer (`assertHeld` before anything leaves): true once the message is out (now or before). Never throws. */
  send(batch: InboundBatch, assertHeld: () => void): Promise<boolean>;
}

export interface TurnWorkerOptions {
  connection: ConnectionOptions;
  redis: RedisClient;
  inbox: ConversationInbox;
  /** Where re-drive jobs are added (the same queue the worker consumes). */
  queue: TurnQueue;
  handle: InboundHandler;
  giveUp: GiveUpHandler;
  /** What a customer hears while a failed batch waits for its next attempt; nothing when absent. */
  holding?: HoldingNotice;
  logger: Logger;
  metrics: Metrics;
  concurrency: number;
  /** The conversation lock's and BullMQ's job lock's TTL; both are renewed every third of it. */
  lockTtlMs: number;
  /**
   * The quiet period (see the module's comment): a burst's second turn starts, and a reply that
   * does not stream leaves, once the newest message is this old; 0 = one turn per message.
   */
  coalesceMs: number;
  /** Per channel id, in place of `coalesceMs`. */
  channelCoalesceMs?: Readonly<Record<string, number>>;
  /** Channels whose replies stream as they are written: held only while the customer types, never for the quiet period. */
  streamingChannels?: ReadonlySet<string>;
  /** Messages and typing reports arriving while this worker holds a conversation (without them no turn is started over). */
  notices?: InboxNotices;
  /** How long a message is retried from its first failure before it is given up on. */
  retryBudgetMs: number;
  /** The first retry delay; it doubles up to a tenth of the budget. */
  retryBackoffMs: number;
  /** Aborted when the process begins shutting down: no new turn starts after it. */
  shutdown: AbortSignal;
  prefix?: string;
  /** In a suspect turn's child: what it waits for (bounded) before it takes its batch — the knowledge index. */
  warmUp?: () => Promise<void>;
}

export type DrainOutcome =
  /** `released`: the last acknowledgement emptied the inbox and freed the lock in one step (nothing can have arrived since). */
  | { kind: 'drained'; released?: boolean }
  | { kind: 'busy' }
  | { kind: 'stopped' }
  /** The batch may still grow: its turn is due at `at`. */
  | { kind: 'quiet'; at: number }
  /** The head failed and is due again at `at`; the re-drive job `redriveId` exists for it. */
  | { kind: 'waiting'; at: number; redriveId: string };
