/**
 * The satisfaction question as the composition root wires it: off (CSAT_ENABLED unset) it adds
 * nothing — the takeover hook and give-up handler are returned as they are, no Redis command.
 * On, it wraps them (`csat.ts`), queues a conversation's quiet check after an answered turn (one
 * ZADD, not again while the check queued is still to come) and, in each worker, runs the checks
 * whose time came (`csat-queue.ts`).
 */
import type { Connection } from 'mongoose';
import type { Config } from '../config.js';
import type { ChannelDefinition, TurnResult } from '../contracts/index.js';
import type { TakeoverHook } from '../takeover/takeover-inbound.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { GiveUpHandler } from '../queue/turn-worker.js';
import type { RedisClient } from '../redis.js';
import type { TranscriptStore } from '../store/transcript-store.js';
import type { PageRatings } from '../transcripts/page-ratings.js';
import { createCsat, type CsatOptions } from './csat.js';
import { createCsatQueue, createCsatWorker } from './csat-queue.js';
import { createCsatState } from './csat-state.js';
import { createCsatStore } from './csat-store.js';
import { createCsatTranscript } from './csat-transcript.js';

export interface CsatRuntimeOptions extends Pick<CsatOptions, 'heldByTeammate' | 'handoffOpen' | 'handoffRole' | 'questionWaiting' | 'now'> {
  config: Config['csat'];
  redis: RedisClient;
  mongo: Connection;
  /** Where the question's messages join the conversation (its history and transcript). */
  transcripts: TranscriptStore;
  channels: ReadonlyMap<string, ChannelDefinition>;
  logger: Logger;
  metrics: Metrics;
  /** Runs a task once MongoDB answers (the collection's index). */
  whenStoreReady?: (name: string, task: () => Promise<void>) => void;
}

export function createCsatRuntime(options: CsatRuntimeOptions) {
  const store = createCsatStore(options.mongo);
  /** The answers the transcript page shows (read whether or not questions are asked now). */
  const pageRatings: PageRatings = async (conversationId) =>
    (await store.answersOf(conversationId)).map((answer) => ({
      id: answer._id,
      score: answer.score ?? 0,
      at: answer.answeredAt ?? answer.askedAt,
      comment: answer.comment,
      withPerson: answer.withPerson,
    }));
  if (!options.config.enabled) {
    return {
      pageRatings,
      feedback: undefined,
      wrapHooks:
        <A>(factory: (input: A) => TakeoverHook) =>
        (input: A) =>
          factory(input),
      giveUp: (inner: GiveUpHandler) => inner,
      noteTurn: (_result: TurnResult): void => undefined,
      start: () => undefined,
      close: async () => undefined,
    };
  }
  options.whenStoreReady?.('csat indexes', () => store.ensureIndexes());
  const queue = createCsatQueue({ redis: options.redis });
  const csat = createCsat({
    ...options.config,
    state: createCsatState(options.redis, options.transcripts),
    store,
    transcript: createCsatTranscript(options.transcripts),
    channels: options.channels,
    heldByTeammate: options.heldByTeammate,
    ...(options.handoffOpen ? { handoffOpen: options.handoffOpen } : {}),
    ...(options.handoffRole ? { handoffRole: options.handoffRole } : {}),
    ...(options.questionWaiting ? { questionWaiting: options.questionWaiting } : {}),
    ...(options.now ? { now: options.now } : {}),
    scheduleQuiet: (conversationKey, at) => queue.scheduleQuiet(conversationKey, at),
    logger: options.logger,
    metrics: options.metrics,
  });
  let worker: { close(): Promise<void> } | undefined;
  return {
    pageRatings,
    /** The comment after a rating, as the turn's judge decides it (the orchestrator's hook). */
    feedback: csat.feedback,
    /** A takeover hook factory whose hooks are wrapped (`csat.ts`: the hand-back's question, the customer's answers). */
    wrapHooks:
      <A>(factory: (input: A) => TakeoverHook) =>
      (input: A) =>
        csat.hook(factory(input)),
    giveUp: (inner: GiveUpHandler) => csat.giveUp(inner),
    noteTurn: (result: TurnResult): Promise<void> => csat.noteTurn(result),
    /** Runs the quiet checks in this process (once). */
    start(): void {
      worker ??= createCsatWorker({
        redis: options.redis,
        afterMs: options.config.afterMs,
        logger: options.logger,
        ...(options.now ? { now: options.now } : {}),
        quiet: (conversationKey, at) => csat.ask(conversationKey, { trigger: 'quiet', at }),
      });
    },
    async close(): Promise<void> {
      await worker?.close();
    },
  };
}
