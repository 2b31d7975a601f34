/**
 * Signed transcript links as a feature: the links (a notice's transcript, a held conversation's
 * media), the transcript page (live with takeover, with the conversation's confirmed actions) and
 * the media it shows; links signed before a person's erasure stop working (`link-revocations.ts`).
 */
import express, { type Router } from 'express';
import type { Config } from '../config.js';
import type { Infrastructure } from '../infrastructure.js';
import type { MediaStore } from '../media/media-store.js';
import type { TranscriptStore } from '../store/transcript-store.js';
import type { PageActions } from './page-actions.js';
import type { PageGuidance } from './page-guidance.js';
import type { PageRatings } from './page-ratings.js';
import { createLinkRevocations } from './link-revocations.js';
import { createTranscriptLinks } from './transcript-link.js';
import { createTranscriptMediaRouter } from './transcript-media.js';
import { createTranscriptRouter, type LivePageOptions } from './transcript-router.js';

/** The signed links and their revocations, as the service and `npm run people` both build them. */
export function createSignedLinks(infra: Pick<Infrastructure, 'redis' | 'logger'>, config: Pick<Config, 'transcriptLinks' | 'publicBaseUrl'>) {
  const links = createTranscriptLinks({
    secret: config.transcriptLinks.secret,
    publicBaseUrl: config.publicBaseUrl,
    ttlHours: config.transcriptLinks.ttlHours,
  });
  const revocations = createLinkRevocations({
    redis: infra.redis,
    secret: config.transcriptLinks.secret,
    ttlHours: config.transcriptLinks.ttlHours,
    links,
    logger: infra.logger,
  });
  return { links, revocations };
}

export function createTranscriptsFeature(
  infra: Infrastructure,
  config: Pick<Config, 'transcriptLinks' | 'publicBaseUrl'>,
  deps: { transcripts: TranscriptStore; media: MediaStore },
) {
  const { links, revocations } = createSignedLinks(infra, config);
  const guard = express.Router().use('/transcripts/:conversationId', revocations.guard);
  return {
    links,
    /** Revokes the links signed so far for a conversation (its person was erased). */
    revocations: { revoke: revocations.revoke },
    /** The transcript page (live: takeover from the page) and its media. */
    routers(page: { live: Omit<LivePageOptions, 'shutdown'>; actions: PageActions | undefined; ratings?: PageRatings; guidance?: PageGuidance }): Router[] {
      const { logger } = infra;
      return [
        // First: a link revoked by an erasure opens nothing.
        guard,
        createTranscriptRouter({
          links,
          transcripts: deps.transcripts,
          logger,
          live: { ...page.live, shutdown: infra.shutdown },
          ...(page.actions ? { actions: page.actions } : {}),
          ...(page.ratings ? { ratings: page.ratings } : {}),
          ...(page.guidance ? { guidance: page.guidance } : {}),
        }),
        createTranscriptMediaRouter({ links, media: deps.media, logger }),
      ];
    },
  };
}
