/**
 * One message's media prepared for a turn (`inbound-media.ts` starts the turn and holds its
 * byte budget): each file loaded, a photo or PDF made a file part within the turn's bytes, the
 * turn's one voice note transcribed, a failure noted for the model to tell the customer; then
 * the text the transcript, the judge and teammates see.
 */
import type { FilePart, TextPart } from 'ai';
import type { InboundMedia, InboundMessage } from '../contracts/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { declaredKind, MediaRejectedError, type MediaFailure, type MediaKind } from './content-check.js';
import { imageForModel } from './image-for-model.js';
import type { ByteBudget } from './media-bytes.js';
import type { MediaLoader } from './media-load.js';
import type { MediaInfo, MediaStore } from './media-store.js';
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

/** The state a turn's messages share: its media bytes (reserved for it, used by parts), its one transcription, the files it named. */
export interface TurnMedia {
  reserved: number;
  used: number;
  transcribed: boolean;
  readonly seen: Set<string>;
}

/** What preparing a turn's media needs. */
export interface PrepareContext {
  store: MediaStore;
  loader: MediaLoader;
  transcribe: Transcriber;
  transcribeTimeoutMs: number;
  maxTurnBytes: number;
  /** The worker's media bytes (a turn grows its share from it) and its gate of files held at once. */
  workerBudget: ByteBudget;
  files: ByteBudget;
  metrics: Metrics;
  conversationId: string;
  signal: AbortSignal;
  logger: Logger;
}

/** What one message's media came to. */
export interface Collected {
  started: number;
  references: MediaReference[];
  parts: FilePart[];
  transcriptions: string[];
  failures: Set<MediaFailure>;
  transcribed: boolean;
}

/** A photo's (downscaled) or PDF's file part, within the turn's media bytes. */
async function filePart(context: PrepareContext, turn: TurnMedia, info: MediaInfo, bytes: Uint8Array): Promise<FilePart> {
  const part = info.kind === 'image' ? await imageForModel(bytes, info.contentType) : { bytes, contentType: info.contentType };
  // A re-encoded image may come out larger than the file it was estimated by: the
  // turn grows its share if the worker has room now (within MEDIA_MAX_TURN_BYTES).
  const missing = part.bytes.byteLength - (turn.reserved - turn.used);
  if (missing > 0 && turn.reserved + missing <= context.maxTurnBytes && context.workerBudget.tryAcquire(missing)) turn.reserved += missing;
  if (part.bytes.byteLength > turn.reserved - turn.used) {
    throw new MediaRejectedError('over-turn-limit', `a ${part.bytes.byteLength}-byte part is over the turn's ${turn.reserved - turn.used} media bytes left`);
  }
  turn.used += part.bytes.byteLength;
  // Images too are file parts (the AI SDK's image part is deprecated); the provider sends them as images.
  return { type: 'file', data: part.bytes, mediaType: part.contentType, ...(info.filename ? { filename: info.filename } : {}) };
}

/** A voice note's transcription: the turn's one (made now, or by an earlier attempt and read back). */
async function transcribeVoice(
  context: PrepareContext,
  turn: TurnMedia,
  collected: Collected,
  info: MediaInfo,
  bytes: Uint8Array,
  reference: MediaReference,
): Promise<void> {
  const { signal } = context;
  if (info.transcription !== undefined) {
    // Stored by an earlier attempt of this turn: it was the turn's transcription then.
    collected.transcribed = true;
    turn.transcribed = true;
    reference.transcription = info.transcription;
    collected.transcriptions.push(info.transcription);
    return;
  }
  if (turn.transcribed) throw new MediaRejectedError('too-many-voice-notes', 'one voice note per turn is transcribed');
  collected.transcribed = true;
  turn.transcribed = true;
  let text: string;
  try {
    text = await context.transcribe(bytes, { signal: AbortSignal.any([signal, AbortSignal.timeout(context.transcribeTimeoutMs)]) });
  } catch (error) {
    if (signal.aborted) throw error;
    throw new MediaRejectedError('transcription-failed', 'the voice note could not be transcribed', { cause: error });
  }
  if (!text) throw new MediaRejectedError('transcription-failed', 'the transcription was empty');
  await context.store.setTranscription(info.id, text);
  reference.transcription = text;
  collected.transcriptions.push(text);
}

/** Loads and uses one media (a file part or the transcription); throws MediaRejectedError for what the customer must fix. */
async function useMedia(
  context: PrepareContext,
  turn: TurnMedia,
  collected: Collected,
  item: { message: InboundMessage; media: InboundMedia; index: number; reference: MediaReference },
): Promise<void> {
  const { message, media, index, reference } = item;
  const { files, signal } = context;
  let holdsFile = false;
  try {
    // A stored PDF over what is left is left out unread.
    if (declaredKind(media.contentType) === 'document' && media.size !== undefined && media.size > turn.reserved - turn.used) {
      throw new MediaRejectedError('over-turn-limit', `a ${media.size}-byte file is over the turn's ${turn.reserved - turn.used} media bytes left`);
    }
    await files.acquire(1, signal);
    holdsFile = true;
    const { info, bytes } = await context.loader.load(message, media, index, context.conversationId, signal);
    Object.assign(reference, { id: info.id, contentType: info.contentType, kind: info.kind, size: info.size });
    if (info.kind === 'image' || info.kind === 'document') collected.parts.push(await filePart(context, turn, info, bytes));
    else await transcribeVoice(context, turn, collected, info, bytes, reference);
    context.metrics.increment('media_total', { channel: message.channel, kind: info.kind, outcome: 'used' });
  } catch (error) {
    // A turn cut short (lost lock, shutdown) is retried by the queue, not answered as a bad media.
    if (!(error instanceof MediaRejectedError) || signal.aborted) throw error;
    reference.error = error.reason;
    collected.failures.add(error.reason);
    context.metrics.increment('media_total', { channel: message.channel, kind: declaredKind(media.contentType) ?? 'other', outcome: error.reason });
    context.logger.warn('media-rejected', { index, contentType: media.contentType, reason: error.reason, error });
  } finally {
    if (holdsFile) files.release(1);
  }
}

/** Each of a message's media loaded and used in turn (a file named twice in the batch sent once). */
export async function collectMedia(context: PrepareContext, turn: TurnMedia, message: InboundMessage): Promise<Collected> {
  const collected: Collected = { started: performance.now(), references: [], parts: [], transcriptions: [], failures: new Set(), transcribed: false };
  for (const [index, media] of (message.media ?? []).entries()) {
    const reference: MediaReference = { contentType: media.contentType, ...(media.filename ? { filename: media.filename } : {}) };
    collected.references.push(reference);
    const storeId = context.loader.storeIdOf(message, media, index);
    if (turn.seen.has(storeId)) {
      // The same file named again in the batch: sent (and counted) once.
      reference.id = storeId;
      context.metrics.increment('media_total', { channel: message.channel, kind: declaredKind(media.contentType) ?? 'other', outcome: 'repeated' });
      continue;
    }
    turn.seen.add(storeId);
    await useMedia(context, turn, collected, { message, media, index, reference });
  }
  return collected;
}

/** The prepared message: summary, caption, transcriptions, and what the model must tell the customer. */
export function describeMedia(message: InboundMessage, collected: Collected, used: number, logger: Logger): PreparedMedia {
  const { references, parts, transcriptions, failures, transcribed } = collected;
  const caption = message.text.trim();
  const summary = mediaSummary(message.media ?? []);
  const lines = [caption ? `${summary} ${caption}` : summary, ...transcriptions.map((text) => `Voice note: "${text}"`)];
  const text = lines.join('\n');
  const notes = [...failures].map(
    (reason) => `[Not understood: ${reason.replaceAll('-', ' ')}. Tell the customer this, in the language they write in: "${MEDIA_FAILURE_REPLIES[reason]}"]`,
  );
  logger.info('media-prepared', {
    media: references.map(({ kind, size, error }) => ({ kind, size, ...(error ? { error } : {}) })),
    modelBytes: used,
    ms: Math.round(performance.now() - collected.started),
  });
  const content: Array<TextPart | FilePart> = [{ type: 'text', text: [text, ...notes].join('\n') }, ...parts];
  return { text, content, media: references, transcribed };
}
