/**
 * A message's media, made usable by the turn, in the worker before the turn runs (the webhook
 * never downloads): each WhatsApp `MediaUrl` is fetched from Twilio (`media-fetch.ts`) and
 * stored in GridFS with its cap and content check (`media-store.ts`); a widget upload is read
 * back by id. Photos and PDFs become file parts (image/*, application/pdf) of the customer's latest message for
 * the reply model; the first voice note is transcribed (at most one transcription call per
 * turn) and answered like text. What the transcript, the judge and hand-off notices see is text:
 * a one-line summary ("(1 photo)"), the caption, the transcription — never the bytes.
 *
 * A media the customer must fix (too big, an unsupported kind, a failed or slow download, a
 * transcription error) never fails the turn: the model is told what happened and the sentence
 * to give the customer in their language, so the reply says it and nothing is retried. Only
 * infrastructure (MongoDB) failures throw, so the queue retries the message as usual.
 */
import type { ModelMessage } from 'ai';
import type { InboundMessage } from '../contracts/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { declaredKind } from './content-check.js';
import type { MediaSource } from './media-fetch.js';
import { ByteBudget } from './media-bytes.js';
import { createMediaLoader } from './media-load.js';
import { collectMedia, describeMedia, type Collected, type PrepareContext, type PreparedMedia, type TurnMedia } from './media-prepare.js';
import type { MediaStore } from './media-store.js';
import type { Transcriber } from './transcribe.js';

export { MEDIA_FAILURE_REPLIES, type MediaReference, type PreparedMedia } from './media-prepare.js';

export interface MediaIntakeOptions {
  store: MediaStore;
  /** Per channel id: the hosts its media URLs may name and the credentials to fetch them. */
  sources: Readonly<Record<string, MediaSource>>;
  transcribe: Transcriber;
  maxBytes: number;
  /** MEDIA_MAX_TURN_BYTES: media bytes one turn sends the model; what does not fit is left out (and the customer told). */
  maxTurnBytes: number;
  /** MEDIA_MAX_WORKER_BYTES: media bytes all turns of this process hold for the model at once; a turn waits for room. */
  maxWorkerBytes: number;
  fetchTimeoutMs: number;
  /** The transcription call's deadline (MODEL_TIMEOUT_MS): past it the voice note is answered as not understood. */
  transcribeTimeoutMs: number;
  logger: Logger;
  metrics: Metrics;
}

/** One turn's media: the batch's messages share the turn's bytes, a file named twice counts once, and one voice note is transcribed. */
export interface MediaTurn {
  /** Undefined when the message has no media. Throws only for infrastructure failures (and a turn cut short). */
  prepare(message: InboundMessage): Promise<PreparedMedia | undefined>;
  /** Gives the turn's media bytes back to the worker; call once its model call is over (idempotent). */
  end(): void;
}

export interface MediaIntake {
  /**
   * Starts the media of a turn answering `messages` (the frozen batch, oldest first): when any
   * has a photo or PDF, waits until the worker's media budget has room for it (up to
   * MEDIA_MAX_TURN_BYTES). Call `end()` when the turn is over, however it ends.
   */
  startTurn(messages: readonly InboundMessage[], context: { conversationId: string; signal: AbortSignal; logger: Logger }): Promise<MediaTurn>;
}

/** How many media files a worker process holds whole at once (read, downscaled, transcribed). */
const FILES_AT_ONCE = 4;

export function createMediaIntake(options: MediaIntakeOptions): MediaIntake {
  const { store, metrics } = options;
  const workerBudget = new ByteBudget(Math.max(options.maxWorkerBytes, options.maxTurnBytes));
  // A gate of FILES_AT_ONCE slots for the bytes of a file being read: the raw photo is held only
  // until its downscaled copy exists, and only this many at once whatever the concurrency.
  const files = new ByteBudget(FILES_AT_ONCE);
  const loader = createMediaLoader(options);
  const { storeIdOf } = loader;

  return {
    async startTurn(messages, { conversationId, signal, logger }) {
      const all = messages.flatMap((message) => (message.media ?? []).map((media, index) => ({ message, media, index })));
      // What the model may get: a photo's or PDF's stored size (a fetch's is not known yet: the cap per file).
      const estimate = [...new Map(all.map(({ message, media, index }) => [storeIdOf(message, media, index), media])).values()]
        .filter((media) => declaredKind(media.contentType) !== 'audio')
        .reduce((sum, media) => sum + (media.size ?? options.maxBytes), 0);
      const turn: TurnMedia = { reserved: Math.min(options.maxTurnBytes, estimate), used: 0, transcribed: false, seen: new Set() };
      if (turn.reserved > 0) {
        const waitStarted = performance.now();
        await workerBudget.acquire(turn.reserved, signal);
        const waitedMs = Math.round(performance.now() - waitStarted);
        if (waitedMs > 0) logger.info('media-budget-waited', { bytes: turn.reserved, ms: waitedMs });
      }
      let pending = messages.filter((message) => (message.media?.length ?? 0) > 0).length;
      const ended = { value: false };
      /** Keeps only what the turn's parts hold once no message of the batch is left to prepare. */
      const shrink = () => {
        if (pending > 0 || ended.value) return;
        workerBudget.release(turn.reserved - turn.used);
        turn.reserved = turn.used;
      };
      const context: PrepareContext = {
        store,
        loader,
        transcribe: options.transcribe,
        transcribeTimeoutMs: options.transcribeTimeoutMs,
        maxTurnBytes: options.maxTurnBytes,
        workerBudget,
        files,
        metrics,
        conversationId,
        signal,
        logger,
      };

      const prepare = async (message: InboundMessage): Promise<PreparedMedia | undefined> => {
        if ((message.media ?? []).length === 0) return undefined;
        let collected: Collected;
        try {
          collected = await collectMedia(context, turn, message);
        } finally {
          pending -= 1;
          shrink();
        }
        return describeMedia(message, collected, turn.used, logger);
      };

      return {
        prepare,
        end() {
          if (ended.value) return;
          ended.value = true;
          workerBudget.release(turn.reserved);
        },
      };
    },
  };
}

/**
 * The model history with the batch's messages (the last user messages, oldest first) carrying
 * their media: the parts only this turn sends.
 */
export function withMediaContent(history: ModelMessage[], batch: readonly (PreparedMedia | undefined)[]): ModelMessage[] {
  const result = [...history];
  for (let offset = 1; offset <= batch.length; offset += 1) {
    const prepared = batch[batch.length - offset];
    const index = result.length - offset;
    if (index < 0 || result[index]?.role !== 'user') break;
    if (prepared) result[index] = { role: 'user', content: prepared.content };
  }
  return result;
}
