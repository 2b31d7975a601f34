/**
 * What `createServices` (src/composition-root.ts) returns and what a test may override: the
 * types only, so the composition root stays the table of features it builds.
 */
import type { Worker } from 'bullmq';
import type express from 'express';
import type { Connection } from 'mongoose';
import type { Config } from './config.js';
import type { ContactStore } from './contacts/contact-store.js';
import type { ChannelCheck } from './channel-plugin.js';
import type { ChannelDefinition, RoleDefinition } from './contracts/index.js';
import type { HandoffStore } from './handoff/handoff-store.js';
import type { Logger } from './logger.js';
import type { MediaStore } from './media/media-store.js';
import type { Metrics } from './metrics.js';
import type { ModelProvider } from './model/provider.js';
import type { Orchestrator } from './orchestrator/run-turn.js';
import type { ConversationInbox } from './queue/conversation-inbox.js';
import type { TurnJob, TurnQueue } from './queue/turn-queue.js';
import type { RedisClient } from './redis.js';
import type { TranscriptOutbox } from './store/outbox.js';
import type { TranscriptStore } from './store/transcript-store.js';
import type { TakeoverService } from './takeover/takeover.js';
import type { TranscriptLinks } from './transcripts/transcript-link.js';

export interface ServiceOverrides {
  models?: ModelProvider;
  logger?: Logger;
  roles?: readonly RoleDefinition[];
  /** BullMQ key prefix (default `QUEUE_PREFIX`; a hash tag on a cluster), so tests sharing one Redis don't see each other's jobs. */
  queuePrefix?: string;
  /** Namespaces the model providers' circuit breakers in Redis, so tests sharing one Redis don't trip each other's. */
  modelBreakerScope?: string;
  /** The intake sweeper's pace (default: every 5 s, messages noted over 10 s ago), shorter in tests. */
  intakeSweep?: { intervalMs: number; staleMs: number };
  /** How often the action sweeper looks for unanswered confirmations and runs nobody came back to (default 10 s). */
  actionSweepMs?: number;
  /** How long after a confirmation's time is up the sweeper waits for an answer that arrived in time (default 60 s). */
  actionAnswerGraceMs?: number;
}

export interface Services {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  redis: RedisClient;
  mongo: Connection;
  transcripts: TranscriptStore;
  /** Transcript records on their way to MongoDB (the worker's transcript writer drains it). */
  outbox: TranscriptOutbox;
  /** Customers' media in GridFS (WhatsApp fetches, widget uploads). */
  media: MediaStore;
  inbox: ConversationInbox;
  queue: TurnQueue;
  orchestrator: Orchestrator;
  channels: ReadonlyMap<string, ChannelDefinition>;
  handoffs: HandoffStore;
  /** Human takeover of handed-off conversations (WhatsApp, the live transcript page, the admin API). */
  takeover: TakeoverService;
  contacts: ContactStore;
  /** The business's knowledge: `start()` builds this process's index (workers and the terminal chat; a web process serves only its admin API). */
  knowledge: { start(): void };
  transcriptLinks: TranscriptLinks;
  app: express.Express;
  /** Starts a BullMQ worker for turns in this process; the first also starts retention and hand-off notices. */
  startWorker(): Worker<TurnJob>;
  /** Starts each channel's credential check in the background (Twilio's): their readiness checks. */
  startChannelChecks(): ChannelCheck[];
  /** Marks the process as draining: readiness fails from now on. */
  beginShutdown(): void;
  close(): Promise<void>;
}
