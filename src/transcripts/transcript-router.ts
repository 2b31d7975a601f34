/**
 * `GET /transcripts/:conversationId`: the one thing a signed transcript link opens. The link
 * is verified before anything is read; a refused link gets a plain-text page saying only
 * whether it is invalid or expired. Every answer forbids caching, indexing, referrers and
 * (by CSP) loading or running anything. This router must never serve a conversation other
 * than the one the link signs, nor anything but its transcript.
 */
import express, { type ErrorRequestHandler, type Response, type Router } from 'express';
import { z } from 'zod';
import type { Logger } from '../logger.js';
import type { TranscriptStore } from '../store/transcript-store.js';
import type { TranscriptLinks } from './transcript-link.js';
import { mediaPath } from './transcript-media.js';
import { renderTranscriptPage, TRANSCRIPT_PAGE_CSP } from './transcript-page.js';

export interface TranscriptRouterOptions {
  links: TranscriptLinks;
  transcripts: Pick<TranscriptStore, 'conversations' | 'conversationMessages'>;
  logger: Logger;
}

const LinkQuerySchema = z.object({ expires: z.string().max(32), sig: z.string().max(128) });

const MAX_CONVERSATION_ID_LENGTH = 512;

function setPrivateHeaders(response: Response): void {
  response.set({
    'Cache-Control': 'no-store',
    'X-Robots-Tag': 'noindex, nofollow',
    'Referrer-Policy': 'no-referrer',
    'Content-Security-Policy': TRANSCRIPT_PAGE_CSP,
    'X-Content-Type-Options': 'nosniff',
    'X-Frame-Options': 'DENY',
  });
}

function plainPage(response: Response, status: number, text: string): void {
  response.status(status).type('text/plain; charset=utf-8').send(`${text}\n`);
}

export function createTranscriptRouter(options: TranscriptRouterOptions): Router {
  const { links, transcripts, logger } = options;
  const router = express.Router();

  router.get('/transcripts/:conversationId', async (request, response) => {
    setPrivateHeaders(response);
    const conversationId = request.params.conversationId;
    const query = LinkQuerySchema.safeParse(request.query);
    const check =
      query.success && conversationId.length <= MAX_CONVERSATION_ID_LENGTH ? links.verify(conversationId, query.data.expires, query.data.sig) : 'invalid';
    if (check !== 'ok') {
      logger.warn('transcript-link-rejected', { reason: check });
      if (check === 'expired') plainPage(response, 410, 'This link has expired');
      else plainPage(response, 403, 'This link is not valid');
      return;
    }

    const [conversation, messages] = await Promise.all([
      transcripts.conversations.findById(conversationId).lean().exec(),
      transcripts.conversationMessages(conversationId),
    ]);
    if (!conversation) {
      logger.warn('transcript-missing', { conversationId });
      plainPage(response, 404, 'This conversation is no longer available');
      return;
    }
    logger.info('transcript-viewed', { conversationId, messages: messages.length });
    response
      .status(200)
      .type('html')
      .send(
        renderTranscriptPage({
          conversation: { id: conversation._id, channel: conversation.channel, address: conversation.address, displayName: conversation.displayName },
          messages,
          generatedAt: new Date(),
          ...(query.success ? { mediaUrl: (mediaId: string) => mediaPath(conversationId, mediaId, query.data) } : {}),
        }),
      );
  });

  // A path that does not even decode was never issued as a link: the same plain refusal.
  const refuseUndecodable: ErrorRequestHandler = (error: unknown, _request, response, next) => {
    if (!(error instanceof URIError)) {
      next(error);
      return;
    }
    setPrivateHeaders(response);
    logger.warn('transcript-link-rejected', { reason: 'undecodable' });
    plainPage(response, 403, 'This link is not valid');
  };
  router.use('/transcripts', refuseUndecodable);

  return router;
}
