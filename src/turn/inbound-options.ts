/** What the worker side of a turn is built from (`createInboundHandler` and its steps). */
import type { ChannelDefinition, TurnResult } from '../contracts/index.js';
import type { TakeoverHook } from '../takeover/takeover-inbound.js';
import type { Logger } from '../logger.js';
import type { MediaIntake } from '../media/inbound-media.js';
import type { Metrics } from '../metrics.js';
import type { Orchestrator } from '../orchestrator/run-turn.js';
import type { TranscriptStore } from '../store/transcript-store.js';

export interface InboundHandlerOptions {
  channels: ReadonlyMap<string, ChannelDefinition>;
  orchestrator: Orchestrator;
  transcripts: TranscriptStore;
  logger: Logger;
  metrics: Metrics;
  /** Fetches, stores and reads a message's media before its turn (photos, voice notes, PDFs). */
  media?: MediaIntake;
  /** Observes each answered turn (the CLI shows its decision); a promise it returns is waited for before the batch is acknowledged. */
  onTurn?: (result: TurnResult) => void | Promise<void>;
  /** Human takeover: handles teammate entries and a held conversation's messages (true: no turn). */
  takeover?: TakeoverHook;
}
