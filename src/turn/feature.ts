/**
 * A conversation's way through the service as a feature: the intake (inbox + intake ledger +
 * turns queue, with the sweeper of notes a dead web process left), what a typing report means,
 * and the workers that answer — the inbound, give-up and holding-message handlers built once the
 * channels, the orchestrator and the takeover hook exist.
 */
import type { Worker } from 'bullmq';
import type { Config } from '../config.js';
import type { ChannelDefinition, InboundMessage, TurnResult } from '../contracts/index.js';
import type { Infrastructure } from '../infrastructure.js';
import type { MediaIntake } from '../media/inbound-media.js';
import type { Orchestrator } from '../orchestrator/run-turn.js';
import { createConversationInbox } from '../queue/conversation-inbox.js';
import { createInboxNotices, type InboxNotices } from '../queue/inbox-notices.js';
import { createIntakeLedger, createIntakeSweeper } from '../queue/intake-ledger.js';
import { createTurnQueue, type TurnJob } from '../queue/turn-queue.js';
import { createTurnWorker, type GiveUpHandler } from '../queue/turn-worker.js';
import type { TranscriptOutbox } from '../store/outbox.js';
import type { TranscriptStore } from '../store/transcript-store.js';
import type { TakeoverHook } from '../takeover/takeover-inbound.js';
import type { GiveUpHandOver } from '../handoff/give-up-handoff.js';
import { createGiveUpHandler, createHoldingNoticeHandler, createInboundHandler } from './handle-inbound.js';
import { createIntake } from './intake.js';

/** How often a worker looks for messages a dead web process left without a job, and how old their note must be. */
const INTAKE_SWEEP = { intervalMs: 5_000, staleMs: 10_000 };

export function createTurnsFeature(
  infra: Infrastructure,
  config: Pick<Config, 'worker' | 'model'>,
  deps: {
    outbox: TranscriptOutbox;
    /** Each channel's quiet period (COALESCE_MS_<CHANNEL>), in place of COALESCE_MS. */
    channelCoalesceMs: Readonly<Record<string, number>>;
    intakeSweep?: { intervalMs: number; staleMs: number } | undefined;
  },
) {
  const { redis, logger, metrics } = infra;
  const inbox = createConversationInbox(redis);
  const queue = createTurnQueue(infra.bull, infra.queuePrefix, config.worker.retryBackoffMs);
  const ledger = createIntakeLedger(redis, infra.queuePrefix);
  const intake = createIntake(inbox, queue, ledger, deps.outbox, logger);
  const sweeper = createIntakeSweeper({ ledger, queue, logger, metrics, ...(deps.intakeSweep ?? INTAKE_SWEEP) });
  /** A typing report stands for its channel's quiet period; 0 turns typing reports off. */
  const reportTyping = async ({ channel, conversationKey }: Pick<InboundMessage, 'channel' | 'conversationKey'>, typing: boolean): Promise<void> => {
    const standsMs = deps.channelCoalesceMs[channel] ?? config.worker.coalesceMs;
    if (standsMs > 0) await inbox.reportTyping(conversationKey, typing ? standsMs : 0);
  };
  const workers: Worker[] = [];
  let notices: InboxNotices | undefined;

  return {
    inbox,
    queue,
    intake,
    /** What a channel gets: where its messages go in, and what its typing reports mean. */
    forChannels: { intake, reportTyping },
    /** The handlers a worker runs, once the channels, the orchestrator and the takeover hook exist; `start` starts one worker. */
    answerWith(parts: {
      channels: ReadonlyMap<string, ChannelDefinition>;
      orchestrator: Orchestrator;
      transcripts: TranscriptStore;
      media: MediaIntake;
      takeover: TakeoverHook;
      heldByTeammate(conversationKey: string): Promise<boolean>;
      /** The satisfaction question: told of each answered turn, and of a given-up message (no question after an apology). */
      csat?: { noteTurn(result: TurnResult): Promise<void> | void; giveUp(inner: GiveUpHandler): GiveUpHandler };
      /** Hands a message the service gave up on to the team of its conversation's role. */
      handOver?: GiveUpHandOver;
      /** What a suspect turn's child waits for (bounded) before it takes its batch: this process's knowledge index. */
      warmUp?: () => Promise<void>;
    }) {
      const { channels, transcripts } = parts;
      const handle = createInboundHandler({
        channels,
        orchestrator: parts.orchestrator,
        transcripts,
        media: parts.media,
        logger,
        metrics,
        takeover: parts.takeover,
        ...(parts.csat ? { onTurn: (result: TurnResult) => parts.csat?.noteTurn(result) } : {}),
      });
      const baseGiveUp = createGiveUpHandler({
        channels,
        transcripts,
        logger,
        metrics,
        handOver: parts.handOver,
        activeRole: (conversationId) => parts.orchestrator.activeRole(conversationId),
      });
      const giveUp = parts.csat ? parts.csat.giveUp(baseGiveUp) : baseGiveUp;
      // A model outage's holding message, sent by the worker while the failed message waits for its retry.
      const holding = createHoldingNoticeHandler({
        channels,
        transcripts,
        logger,
        metrics,
        holdingNoticeMs: config.model.holdingNoticeMs,
        heldByTeammate: parts.heldByTeammate,
      });
      // A streamed reply is held only while the customer types, never for the quiet period.
      const streamingChannels = new Set([...channels.values()].filter((channel) => channel.transport.streamDelta).map((channel) => channel.id));
      return {
        start(): Worker<TurnJob> {
          notices ??= createInboxNotices(redis, logger);
          const worker = createTurnWorker({
            connection: infra.bull,
            redis,
            inbox,
            queue,
            handle,
            giveUp,
            holding,
            logger,
            metrics,
            concurrency: config.worker.concurrency,
            lockTtlMs: config.worker.lockTtlMs,
            coalesceMs: config.worker.coalesceMs,
            channelCoalesceMs: deps.channelCoalesceMs,
            streamingChannels,
            notices,
            retryBudgetMs: config.worker.retryBudgetMs,
            retryBackoffMs: config.worker.retryBackoffMs,
            shutdown: infra.shutdown,
            prefix: infra.queuePrefix,
            warmUp: parts.warmUp,
          });
          workers.push(worker);
          return worker;
        },
      };
    },
    startSweeper: () => sweeper.start(),
    /** The workers (their turns end first), the inbox notices, the sweeper. */
    async closeWorkers(): Promise<void> {
      await Promise.all(workers.map((worker) => worker.close()));
      await notices?.close();
      await sweeper.close();
    },
    /** The intake's waiting cross-offs, then the queue. */
    async close(): Promise<void> {
      await ledger.flush();
      await queue.close();
    },
  };
}
