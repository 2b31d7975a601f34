/**
 * `GET /transcripts/:conversationId`: the one thing a signed transcript link opens — with the
 * takeover service wired in, the live page (its event stream and its actions mounted beside it,
 * see `live-events.ts` and `live-actions.ts`). The link is verified before anything is read; a
 * refused link gets a plain-text page saying only whether it is invalid or expired. Every
 * answer forbids caching, indexing, referrers and framing, and (by CSP) loading anything; the
 * live page runs its one script by a per-response nonce. This router must never serve a
 * conversation other than the one the link signs, nor anything but its transcript.
 */
import { randomBytes } from 'node:crypto';
import express, { type ErrorRequestHandler, type Router } from 'express';
import type { Logger } from '../logger.js';
import type { TranscriptStore } from '../store/transcript-store.js';
import { createLiveActionsHandler } from './live-actions.js';
import { createLiveEventsHandler } from './live-events.js';
import { pageHandoff, pageMessage, type LiveTakeover, type LiveTeam } from './live-takeover.js';
import type { TranscriptLinks } from './transcript-link.js';
import { checkLink, plainPage, refusalText, setPrivateHeaders } from './transcript-http.js';
import type { PageActions } from './page-actions.js';
import { guidanceIdsOf, type PageGuidance } from './page-guidance.js';
import type { PageRatings } from './page-ratings.js';
import { mediaPath } from './transcript-media.js';
import { livePageCsp, renderTranscriptPage } from './transcript-page.js';

export interface LivePageOptions {
  takeover: LiveTakeover;
  /** Each team's label and members (HANDOFF_TEAMS). */
  teams: Readonly<Record<string, LiveTeam | undefined>>;
  /** The longest reply a teammate may send from the page. */
  maxReplyChars: number;
  /** Aborted when the process starts draining: open event streams end. */
  shutdown: AbortSignal;
  /** Overrides how often an open stream reads the stored transcript again (tests). */
  rereadMs?: number;
}

export interface TranscriptRouterOptions {
  links: TranscriptLinks;
  transcripts: Pick<TranscriptStore, 'conversations' | 'conversationMessages'>;
  logger: Logger;
  /** Without it the link opens the plain, read-only transcript. */
  live?: LivePageOptions;
  /** The conversation's confirmed actions (shown inline; the live page runs or declines a team's). */
  actions?: PageActions;
  /** The conversation's satisfaction answers (shown inline; a failed read leaves them out, never the page). */
  ratings?: PageRatings;
  /** Names the guidance entries a reply records (a failed read shows the ids alone, never fails the page). */
  guidance?: PageGuidance;
}

// Actions are a few short fields and a reply: anything bigger is refused before it is parsed.
const ACTION_BODY_LIMIT = '16kb';

export function createTranscriptRouter(options: TranscriptRouterOptions): Router {
  const { links, transcripts, logger, live, actions, ratings, guidance } = options;
  const ratingsOf = async (conversationId: string) => {
    try {
      return ratings ? await ratings(conversationId) : [];
    } catch (error) {
      logger.warn('transcript-ratings-failed', { conversationId, error });
      return [];
    }
  };
  const guidanceOf = async (conversationId: string, ids: string[]) => {
    try {
      return guidance && ids.length ? await guidance(ids) : undefined;
    } catch (error) {
      logger.warn('transcript-guidance-failed', { conversationId, error });
      return undefined;
    }
  };
  const router = express.Router();

  router.get('/transcripts/:conversationId', async (request, response) => {
    setPrivateHeaders(response);
    const conversationId = request.params.conversationId;
    const { check, link } = checkLink(links, conversationId, request.query);
    if (check !== 'ok' || !link) {
      logger.warn('transcript-link-rejected', { reason: check });
      const [status, text] = refusalText[check === 'ok' ? 'invalid' : check];
      plainPage(response, status, text);
      return;
    }

    const [conversation, messages, handoffs, changes, answers] = await Promise.all([
      transcripts.conversations.findById(conversationId).lean().exec(),
      transcripts.conversationMessages(conversationId),
      live ? live.takeover.handoffsOf(conversationId) : Promise.resolve([]),
      actions ? actions.list(conversationId) : Promise.resolve([]),
      ratingsOf(conversationId),
    ]);
    if (!conversation) {
      logger.warn('transcript-missing', { conversationId });
      plainPage(response, 404, 'This conversation is no longer available');
      return;
    }
    const pageMessages = messages.map(pageMessage);
    const guidanceEntries = await guidanceOf(conversationId, guidanceIdsOf(pageMessages.map((message) => message.guidance)));
    logger.info('transcript-viewed', { conversationId, messages: messages.length, live: Boolean(live) });
    const handoff = live ? pageHandoff(handoffs, live.teams) : undefined;
    const nonce = randomBytes(16).toString('base64');
    if (live) setPrivateHeaders(response, livePageCsp(nonce));
    response
      .status(200)
      .type('html')
      .send(
        renderTranscriptPage({
          conversation: {
            id: conversation._id,
            channel: conversation.channel,
            address: conversation.address,
            displayName: conversation.displayName,
            siteData: conversation.siteData,
          },
          messages: pageMessages,
          ...(guidanceEntries ? { guidanceEntries } : {}),
          actions: changes,
          ratings: answers,
          generatedAt: new Date(),
          live: live && {
            nonce,
            csrf: links.csrfToken(link),
            link: { expires: link.expires, sig: link.signature },
            handoff,
            members: handoff ? (live.teams[handoff.team]?.members ?? []).map((member) => member.name) : [],
            maxReplyChars: live.maxReplyChars,
          },
          mediaUrl: (mediaId: string) => mediaPath(conversationId, mediaId, { expires: link.expires, sig: link.signature }),
        }),
      );
  });

  if (live) {
    router.get('/transcripts/:conversationId/events', createLiveEventsHandler({ links, transcripts, logger, ...live }));
    router.post(
      '/transcripts/:conversationId/actions',
      express.json({ limit: ACTION_BODY_LIMIT, strict: true }),
      createLiveActionsHandler({ links, logger, ...live, ...(actions ? { actions } : {}) }),
    );
  }

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
