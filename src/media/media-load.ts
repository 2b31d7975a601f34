/** A turn's media as bytes: a widget upload read back by id, a WhatsApp media fetched and stored once (GridFS). */
import type { InboundMedia, InboundMessage } from '../contracts/index.js';
import { declaredKind, MediaRejectedError } from './content-check.js';
import { fetchMedia, type MediaSource } from './media-fetch.js';
import { mediaIdFor, type MediaInfo, type MediaStore } from './media-store.js';
import { ByteSink, guarded } from './media-bytes.js';

export interface Loaded {
  info: MediaInfo;
  bytes: Uint8Array;
}

export interface MediaLoaderOptions {
  store: MediaStore;
  /** Per channel id: the hosts its media URLs may name and the credentials to fetch them. */
  sources: Readonly<Record<string, MediaSource>>;
  maxBytes: number;
  fetchTimeoutMs: number;
}

export interface MediaLoader {
  /** The media store id a media has (a widget upload) or will have (a WhatsApp fetch, by message and index). */
  storeIdOf(message: InboundMessage, media: InboundMedia, index: number): string;
  /** Stores (or finds) one media and returns its bytes; throws MediaRejectedError for the customer's media, anything else for infrastructure. */
  load(message: InboundMessage, media: InboundMedia, index: number, conversationId: string, signal: AbortSignal): Promise<Loaded>;
}

export function createMediaLoader(options: MediaLoaderOptions): MediaLoader {
  const { store } = options;

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

  return { storeIdOf, load };
}
