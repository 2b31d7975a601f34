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
import type { FilePart, ModelMessage, TextPart } from 'ai';
import type { InboundMedia, InboundMessage } from '../contracts/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { declaredKind, MediaRejectedError, type MediaFailure, type MediaKind } from './content-check.js';
import { fetchMedia, isTimeout, type MediaSource } from './media-fetch.js';
import { imageForModel } from './image-for-model.js';
import { mediaIdFor, type MediaInfo, type MediaStore } from './media-store.js';
import type { Transcriber } from './transcribe.js';

/** What the inbound message's transcript record keeps of one media. */
export interface MediaReference {
  /** The media store id (absent when nothing was stored). */
  id?: string;
  contentType: string;
  kind?: MediaKind;
  size?: number;
  filename?: string;
  transcription?: string;
  /** Why it could not be used. */
  error?: MediaFailure;
}

export interface PreparedMedia {
  /** The message as the transcript, the judge and teammates see it: summary, caption, transcription. */
  text: string;
  /** The customer's latest message for the reply model: the text, what it must tell the customer, the image and file parts. */
  content: Array<TextPart | FilePart>;
  media: MediaReference[];
  /**
   * True when this message holds the turn's one transcription: made now, or by an earlier attempt
   * of the same (frozen) batch and read back, so a retried turn transcribes no other voice note.
   */
  transcribed: boolean;
}

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

/** What the customer is told, per failure (the model says it in the customer's language). */
export const MEDIA_FAILURE_REPLIES: Record<MediaFailure, string> = {
  'too-large': 'That file is too large for me to open. Could you send a smaller one, or tell me in a message what it shows?',
  'unsupported-type':
    "I can understand photos, screenshots, PDF documents and voice notes, but not this kind of file. Could you send it as one of those, or tell me in a message what it's about?",
  'download-failed': "I couldn't open your attachment. Could you send it again?",
  'download-timeout': "I couldn't open your attachment. Could you send it again?",
  'transcription-failed': "I couldn't make out your voice note. Could you send it again, or type your message?",
  'too-many-voice-notes': 'I can listen to one voice note per message. Could you send the others one at a time?',
  unreadable: "I couldn't open that image. Could you send it again, or take a screenshot of it?",
  'over-turn-limit': 'That was more than I can look at in one go, so I left some of your files out. Could you send the rest in another message?',
};

const LABELS: Record<MediaKind | 'file', [string, string]> = {
  image: ['photo', 'photos'],
  audio: ['voice note', 'voice notes'],
  document: ['PDF', 'PDFs'],
  file: ['file', 'files'],
};

/** "(1 photo)", "(2 photos, 1 PDF)": what the message carried, by declared kind. */
function mediaSummary(media: readonly Pick<InboundMedia, 'contentType'>[]): string {
  const counts = new Map<MediaKind | 'file', number>();
  for (const item of media) {
    const kind = declaredKind(item.contentType) ?? 'file';
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  const order: (MediaKind | 'file')[] = ['image', 'audio', 'document', 'file'];
  const listed = order.flatMap((kind) => {
    const count = counts.get(kind);
    const [one, many] = LABELS[kind];
    return count ? [`${count} ${count === 1 ? one : many}`] : [];
  });
  return `(${listed.join(', ')})`;
}

/**
 * A buffer the bytes are copied into as they stream: allocated once when the length is
 * announced, grown by doubling otherwise, so a file is held whole only once.
 */
class ByteSink {
  private buffer: Buffer;
  private length = 0;
  constructor(
    expected: number | undefined,
    private readonly maxBytes: number,
  ) {
    this.buffer = Buffer.allocUnsafe(Math.min(expected ?? 64 * 1024, maxBytes));
  }
  push(chunk: Buffer): void {
    if (this.length + chunk.length > this.buffer.length) {
      const grown = Buffer.allocUnsafe(Math.min(this.maxBytes, Math.max(this.length + chunk.length, this.buffer.length * 2)));
      this.buffer.copy(grown, 0, 0, this.length);
      this.buffer = grown;
    }
    chunk.copy(this.buffer, this.length);
    this.length += chunk.length;
  }
  bytes(): Uint8Array {
    return this.buffer.subarray(0, this.length);
  }
}

/** The body of a download, with its errors (a network failure, the deadline) turned into media failures. */
async function* guarded(body: AsyncIterable<Uint8Array>, signal: AbortSignal): AsyncGenerator<Uint8Array> {
  try {
    for await (const chunk of body) yield chunk;
  } catch (error) {
    if (error instanceof MediaRejectedError) throw error;
    if (isTimeout(error, signal)) throw new MediaRejectedError('download-timeout', 'media download timed out', { cause: error });
    throw new MediaRejectedError('download-failed', 'media download broke off', { cause: error });
  }
}

interface Loaded {
  info: MediaInfo;
  bytes: Uint8Array;
}

/**
 * A byte budget shared by the turns of one worker process, handed out first come, first served:
 * a turn waits (holding nothing) until its reservation fits, so the media all turns hold for the
 * model at once stays within it.
 */
class ByteBudget {
  private available: number;
  private readonly waiting: { bytes: number; grant: () => void }[] = [];
  constructor(readonly total: number) {
    this.available = total;
  }
  async acquire(bytes: number, signal: AbortSignal): Promise<void> {
    if (this.waiting.length === 0 && bytes <= this.available) {
      this.available -= bytes;
      return;
    }
    signal.throwIfAborted();
    await new Promise<void>((resolve, reject) => {
      const entry = { bytes, grant: () => (signal.removeEventListener('abort', abort), resolve()) };
      const abort = () => {
        const index = this.waiting.indexOf(entry);
        if (index >= 0) this.waiting.splice(index, 1);
        reject(signal.reason instanceof Error ? signal.reason : new Error('turn aborted'));
        this.drain();
      };
      signal.addEventListener('abort', abort, { once: true });
      this.waiting.push(entry);
    });
  }
  /** Takes `bytes` now if they are free and nobody waits; never waits (a turn holding bytes must not). */
  tryAcquire(bytes: number): boolean {
    if (this.waiting.length > 0 || bytes > this.available) return false;
    this.available -= bytes;
    return true;
  }
  release(bytes: number): void {
    this.available += bytes;
    this.drain();
  }
  private drain(): void {
    for (let next = this.waiting[0]; next && next.bytes <= this.available; next = this.waiting[0]) {
      this.waiting.shift();
      this.available -= next.bytes;
      next.grant();
    }
  }
}

/** How many media files a worker process holds whole at once (read, downscaled, transcribed). */
const FILES_AT_ONCE = 4;

export function createMediaIntake(options: MediaIntakeOptions): MediaIntake {
  const { store, metrics } = options;
  const workerBudget = new ByteBudget(Math.max(options.maxWorkerBytes, options.maxTurnBytes));
  // A gate of FILES_AT_ONCE slots for the bytes of a file being read: the raw photo is held only
  // until its downscaled copy exists, and only this many at once whatever the concurrency.
  const files = new ByteBudget(FILES_AT_ONCE);

  const readStored = async (info: MediaInfo): Promise<Loaded> => {
    const opened = await store.open(info.id);
    if (!opened) throw new MediaRejectedError('download-failed', `media ${info.id} vanished`);
    const sink = new ByteSink(info.size, Math.max(info.size, 1));
    for await (const chunk of opened.stream) sink.push(chunk as Buffer);
    return { info, bytes: sink.bytes() };
  };

  /** The media store id a media has (a widget upload) or will have (a WhatsApp fetch, by message and index). */
  const storeIdOf = (message: InboundMessage, media: InboundMedia, index: number) => media.id ?? mediaIdFor(`${message.channel}:${message.messageId}:${index}`);

  /** Stores (or finds) one media and returns its bytes; throws MediaRejectedError for the customer's media, anything else for infrastructure. */
  const load = async (message: InboundMessage, media: InboundMedia, index: number, conversationId: string, signal: AbortSignal): Promise<Loaded> => {
    if (media.id !== undefined) {
      const info = await store.info(media.id);
      if (!info || info.conversationId !== conversationId) throw new MediaRejectedError('download-failed', `no stored media ${media.id} for this conversation`);
      return readStored(info);
    }
    if (declaredKind(media.contentType) === undefined) {
      throw new MediaRejectedError('unsupported-type', `unsupported media type ${media.contentType}`);
    }
    const source = options.sources[message.channel];
    if (!source || media.url === undefined) throw new MediaRejectedError('download-failed', `channel ${message.channel} has no media source`);
    // A retried message finds what an earlier attempt stored instead of downloading it again.
    const id = storeIdOf(message, media, index);
    const stored = await store.info(id);
    if (stored) return readStored(stored);
    const deadline = AbortSignal.any([signal, AbortSignal.timeout(options.fetchTimeoutMs)]);
    const fetched = await fetchMedia(media.url, source, { maxBytes: options.maxBytes, signal: deadline });
    const sink = new ByteSink(fetched.contentLength, options.maxBytes);
    try {
      const info = await store.put(guarded(fetched.body, deadline), {
        id,
        contentType: media.contentType,
        conversationId,
        channel: message.channel,
        ...(media.filename ? { filename: media.filename } : {}),
        onChunk: (chunk) => sink.push(chunk),
      });
      return { info, bytes: sink.bytes() };
    } finally {
      fetched.body.destroy();
    }
  };

  return {
    async startTurn(messages, { conversationId, signal, logger }) {
      const all = messages.flatMap((message) => (message.media ?? []).map((media, index) => ({ message, media, index })));
      // What the model may get: a photo's or PDF's stored size (a fetch's is not known yet: the cap per file).
      const estimate = [...new Map(all.map(({ message, media, index }) => [storeIdOf(message, media, index), media])).values()]
        .filter((media) => declaredKind(media.contentType) !== 'audio')
        .reduce((sum, media) => sum + (media.size ?? options.maxBytes), 0);
      let reserved = Math.min(options.maxTurnBytes, estimate);
      if (reserved > 0) {
        const waitStarted = performance.now();
        await workerBudget.acquire(reserved, signal);
        const waitedMs = Math.round(performance.now() - waitStarted);
        if (waitedMs > 0) logger.info('media-budget-waited', { bytes: reserved, ms: waitedMs });
      }
      let used = 0;
      let pending = messages.filter((message) => (message.media?.length ?? 0) > 0).length;
      let turnTranscribed = false;
      const seen = new Set<string>();
      const ended = { value: false };
      /** Keeps only what the turn's parts hold once no message of the batch is left to prepare. */
      const shrink = () => {
        if (pending > 0 || ended.value) return;
        workerBudget.release(reserved - used);
        reserved = used;
      };

      const prepare = async (message: InboundMessage): Promise<PreparedMedia | undefined> => {
        const items = message.media ?? [];
        if (items.length === 0) return undefined;
        const started = performance.now();
        const references: MediaReference[] = [];
        const parts: FilePart[] = [];
        const transcriptions: string[] = [];
        const failures = new Set<MediaFailure>();
        let transcribed = false;
        try {
          for (const [index, media] of items.entries()) {
            const reference: MediaReference = { contentType: media.contentType, ...(media.filename ? { filename: media.filename } : {}) };
            references.push(reference);
            const storeId = storeIdOf(message, media, index);
            if (seen.has(storeId)) {
              // The same file named again in the batch: sent (and counted) once.
              reference.id = storeId;
              metrics.increment('media_total', { channel: message.channel, kind: declaredKind(media.contentType) ?? 'other', outcome: 'repeated' });
              continue;
            }
            seen.add(storeId);
            let holdsFile = false;
            try {
              // A stored PDF over what is left is left out unread.
              if (declaredKind(media.contentType) === 'document' && media.size !== undefined && media.size > reserved - used) {
                throw new MediaRejectedError('over-turn-limit', `a ${media.size}-byte file is over the turn's ${reserved - used} media bytes left`);
              }
              await files.acquire(1, signal);
              holdsFile = true;
              const { info, bytes } = await load(message, media, index, conversationId, signal);
              Object.assign(reference, { id: info.id, contentType: info.contentType, kind: info.kind, size: info.size });
              if (info.kind === 'image' || info.kind === 'document') {
                const part = info.kind === 'image' ? await imageForModel(bytes, info.contentType) : { bytes, contentType: info.contentType };
                // A re-encoded image may come out larger than the file it was estimated by: the
                // turn grows its share if the worker has room now (within MEDIA_MAX_TURN_BYTES).
                const missing = part.bytes.byteLength - (reserved - used);
                if (missing > 0 && reserved + missing <= options.maxTurnBytes && workerBudget.tryAcquire(missing)) reserved += missing;
                if (part.bytes.byteLength > reserved - used) {
                  throw new MediaRejectedError(
                    'over-turn-limit',
                    `a ${part.bytes.byteLength}-byte part is over the turn's ${reserved - used} media bytes left`,
                  );
                }
                used += part.bytes.byteLength;
                // Images too are file parts (the AI SDK's image part is deprecated); the provider sends them as images.
                parts.push({ type: 'file', data: part.bytes, mediaType: part.contentType, ...(info.filename ? { filename: info.filename } : {}) });
              } else if (info.transcription !== undefined) {
                // Stored by an earlier attempt of this turn: it was the turn's transcription then.
                transcribed = true;
                turnTranscribed = true;
                reference.transcription = info.transcription;
                transcriptions.push(info.transcription);
              } else if (turnTranscribed) {
                throw new MediaRejectedError('too-many-voice-notes', 'one voice note per turn is transcribed');
              } else {
                transcribed = true;
                turnTranscribed = true;
                let text: string;
                try {
                  text = await options.transcribe(bytes, { signal: AbortSignal.any([signal, AbortSignal.timeout(options.transcribeTimeoutMs)]) });
                } catch (error) {
                  if (signal.aborted) throw error;
                  throw new MediaRejectedError('transcription-failed', 'the voice note could not be transcribed', { cause: error });
                }
                if (!text) throw new MediaRejectedError('transcription-failed', 'the transcription was empty');
                await store.setTranscription(info.id, text);
                reference.transcription = text;
                transcriptions.push(text);
              }
              metrics.increment('media_total', { channel: message.channel, kind: info.kind, outcome: 'used' });
            } catch (error) {
              // A turn cut short (lost lock, shutdown) is retried by the queue, not answered as a bad media.
              if (!(error instanceof MediaRejectedError) || signal.aborted) throw error;
              reference.error = error.reason;
              failures.add(error.reason);
              metrics.increment('media_total', { channel: message.channel, kind: declaredKind(media.contentType) ?? 'other', outcome: error.reason });
              logger.warn('media-rejected', { index, contentType: media.contentType, reason: error.reason, error });
            } finally {
              if (holdsFile) files.release(1);
            }
          }
        } finally {
          pending -= 1;
          shrink();
        }
        const caption = message.text.trim();
        const summary = mediaSummary(items);
        const lines = [caption ? `${summary} ${caption}` : summary, ...transcriptions.map((text) => `Voice note: "${text}"`)];
        const text = lines.join('\n');
        const notes = [...failures].map(
          (reason) =>
            `[Not understood: ${reason.replaceAll('-', ' ')}. Tell the customer this, in the language they write in: "${MEDIA_FAILURE_REPLIES[reason]}"]`,
        );
        logger.info('media-prepared', {
          media: references.map(({ kind, size, error }) => ({ kind, size, ...(error ? { error } : {}) })),
          modelBytes: used,
          ms: Math.round(performance.now() - started),
        });
        return { text, content: [{ type: 'text', text: [text, ...notes].join('\n') }, ...parts], media: references, transcribed };
      };

      return {
        prepare,
        end() {
          if (ended.value) return;
          ended.value = true;
          workerBudget.release(reserved);
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
