/**
 * A conversation's media on its transcript page: how one message's attachments render (images
 * inline, audio with a player and its transcription, documents as download links) and
 * `GET /transcripts/:conversationId/media/:mediaId`, the only way the page's media are served.
 * That route takes the same signed `expires`/`sig` as the page (or a link signed for that one
 * file, `TranscriptLinks.mediaUrl`, which a relay to a teammate carries), checks them before reading
 * anything, and serves a file only if it was stored for that very conversation — with the type
 * the bytes were found to be, `nosniff`, a sandboxing CSP, no caching, and documents as
 * downloads. It must never serve media to a request without a valid link for its conversation.
 */
import express, { type ErrorRequestHandler, type Response, type Router } from 'express';
import { z } from 'zod';
import type { Logger } from '../logger.js';
import type { MediaReference } from '../media/inbound-media.js';
import type { MediaStore } from '../media/media-store.js';
import type { TranscriptLinks } from './transcript-link.js';

const htmlEntities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (character) => htmlEntities[character] ?? character);

/** The page's styles for media (the page pins its stylesheet by hash, so these are part of it). */
export const MEDIA_STYLE = `
.media { margin: 0.375rem 0 0; }
.media img { display: block; max-width: 100%; max-height: 20rem; border-radius: 0.5rem; border: 1px solid var(--line); }
.media audio { display: block; width: 100%; max-width: 18rem; }
.transcription { margin: 0.25rem 0 0; font-size: 0.875rem; color: var(--muted); white-space: pre-wrap; overflow-wrap: anywhere; }
.document { display: inline-block; padding: 0.25rem 0.5rem; border: 1px solid var(--line); border-radius: 0.375rem; color: inherit; overflow-wrap: anywhere; }
`.trim();

/** The CSP sources the page needs for its media (same origin: the media route). */
export const MEDIA_CSP = ["img-src 'self'", "media-src 'self'"];

const KIND_LABELS = { image: 'photo', audio: 'voice note', document: 'document' } as const;

const kindOf = (media: MediaReference): 'image' | 'audio' | 'document' =>
  media.kind ?? (media.contentType.startsWith('image/') ? 'image' : media.contentType.startsWith('audio/') ? 'audio' : 'document');

function sizeText(bytes: number | undefined): string {
  if (bytes === undefined) return '';
  if (bytes < 1024) return ` (${bytes} B)`;
  if (bytes < 1024 * 1024) return ` (${Math.round(bytes / 1024)} KB)`;
  return ` (${(bytes / (1024 * 1024)).toFixed(1)} MB)`;
}

/**
 * One message's attachments as page markup; `url` gives a media's signed address (without it,
 * only what was attached is named). Every stored text is escaped.
 */
export function renderMessageMedia(media: readonly MediaReference[] | undefined, url: ((mediaId: string) => string) | undefined): string {
  if (!media || media.length === 0) return '';
  return media
    .map((item) => {
      const kind = kindOf(item);
      const label = escapeHtml(item.filename ?? KIND_LABELS[kind]);
      // Not kept (too big, a failed download…): named, with why, and nothing to open.
      if (item.id === undefined || !url) return `<p class="media">Attachment: ${label}${item.error ? ` · not used: ${escapeHtml(item.error)}` : ''}</p>`;
      const href = escapeHtml(url(item.id));
      if (kind === 'image') {
        return `<figure class="media"><a href="${href}"><img src="${href}" alt="${escapeHtml(item.filename ? `Photo: ${item.filename}` : 'Photo from the customer')}"></a></figure>`;
      }
      if (kind === 'audio') {
        const transcription =
          item.transcription !== undefined
            ? `<p class="transcription">Transcription: ${escapeHtml(item.transcription)}</p>`
            : '<p class="transcription">Not transcribed</p>';
        return `<figure class="media"><audio controls preload="none" src="${href}"></audio>${transcription}</figure>`;
      }
      const name = item.filename ?? 'document';
      return `<p class="media"><a class="document" href="${href}" download="${escapeHtml(name)}">Download ${escapeHtml(name)}${sizeText(item.size)}</a></p>`;
    })
    .join('');
}

/** The signed address of one media, from the page's own link parts. */
export function mediaPath(conversationId: string, mediaId: string, link: { expires: string; sig: string }): string {
  const query = new URLSearchParams({ expires: link.expires, sig: link.sig });
  return `/transcripts/${encodeURIComponent(conversationId)}/media/${encodeURIComponent(mediaId)}?${query.toString()}`;
}

export interface TranscriptMediaRouterOptions {
  links: TranscriptLinks;
  media: Pick<MediaStore, 'open'>;
  logger: Logger;
}

const LinkQuerySchema = z.object({ expires: z.string().max(32), sig: z.string().max(128) });
const MAX_CONVERSATION_ID_LENGTH = 512;
const MEDIA_ID = /^[0-9a-f]{24}$/;

function refuse(response: Response, status: number, text: string): void {
  response.status(status).type('text/plain; charset=utf-8').send(`${text}\n`);
}

/** A filename safe inside a quoted Content-Disposition parameter, with its UTF-8 original beside it. */
function contentDisposition(kind: 'inline' | 'attachment', filename: string | undefined): string {
  if (!filename) return kind;
  const plain = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `${kind}; filename="${plain}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

export function createTranscriptMediaRouter(options: TranscriptMediaRouterOptions): Router {
  const { links, media, logger } = options;
  const router = express.Router();

  router.get('/transcripts/:conversationId/media/:mediaId', async (request, response) => {
    response.set({
      'Cache-Control': 'no-store',
      'X-Robots-Tag': 'noindex, nofollow',
      'Referrer-Policy': 'no-referrer',
      // A served file can run nothing and load nothing, even opened on its own.
      'Content-Security-Policy': "default-src 'none'; sandbox",
      'X-Content-Type-Options': 'nosniff',
      'Cross-Origin-Resource-Policy': 'same-origin',
    });
    const { conversationId, mediaId } = request.params;
    const query = LinkQuerySchema.safeParse(request.query);
    // The page's own link (any media of its conversation), or a link to this one file (a relay to a teammate).
    const pageCheck =
      query.success && conversationId.length <= MAX_CONVERSATION_ID_LENGTH ? links.verify(conversationId, query.data.expires, query.data.sig) : 'invalid';
    const check =
      pageCheck === 'invalid' && query.success && conversationId.length <= MAX_CONVERSATION_ID_LENGTH
        ? links.verifyMedia(conversationId, mediaId, query.data.expires, query.data.sig)
        : pageCheck;
    if (check !== 'ok') {
      logger.warn('transcript-media-rejected', { reason: check });
      if (check === 'expired') refuse(response, 410, 'This link has expired');
      else refuse(response, 403, 'This link is not valid');
      return;
    }
    const opened = MEDIA_ID.test(mediaId) ? await media.open(mediaId) : undefined;
    // Media of another conversation is as absent as media that never existed.
    if (!opened || opened.info.conversationId !== conversationId) {
      opened?.stream.destroy();
      logger.warn('transcript-media-missing', { conversationId, mediaId });
      refuse(response, 404, 'This file is no longer available');
      return;
    }
    const { info, stream } = opened;
    const download = info.kind === 'document';
    response.status(200).set({
      'Content-Type': info.contentType,
      'Content-Length': String(info.size),
      'Content-Disposition': contentDisposition(download ? 'attachment' : 'inline', info.filename),
    });
    logger.info('transcript-media-served', { conversationId, mediaId, contentType: info.contentType });
    stream.on('error', (error) => {
      logger.warn('transcript-media-read-failed', { conversationId, mediaId, error });
      if (response.headersSent) response.destroy();
      else refuse(response, 503, 'This file could not be read, try again');
    });
    stream.pipe(response);
  });

  // A path that does not even decode was never issued as a link.
  const refuseUndecodable: ErrorRequestHandler = (error: unknown, _request, response, next) => {
    if (!(error instanceof URIError)) {
      next(error);
      return;
    }
    logger.warn('transcript-media-rejected', { reason: 'undecodable' });
    refuse(response, 403, 'This link is not valid');
  };
  router.use('/transcripts', refuseUndecodable);

  return router;
}
