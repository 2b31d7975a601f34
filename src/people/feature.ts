/**
 * A person's data on request as a feature: the people service (export, erasure, resumption of
 * erasures a crash left) and its admin routes. Workers resume erasures (`start`).
 */
import type { Config } from '../config.js';
import type { ContactIndex } from '../contacts/contact-index.js';
import type { Infrastructure } from '../infrastructure.js';
import { logIdOf } from '../logger-privacy.js';
import type { MediaStore } from '../media/media-store.js';
import type { CutoffOf } from '../store/retention.js';
import type { LinkRevocations } from '../transcripts/link-revocations.js';
import type { TranscriptLinks } from '../transcripts/transcript-link.js';
import { createPeople } from './people.js';
import { purgeByAge } from './retention.js';
import { createPeopleRouter } from './routes.js';

export function createPeopleFeature(
  infra: Infrastructure,
  config: Pick<Config, 'adminToken' | 'logIdSecret'>,
  deps: {
    contacts: ContactIndex;
    media: Pick<MediaStore, 'remove'>;
    links: Pick<TranscriptLinks, 'mediaUrl'>;
    revocations?: LinkRevocations;
    settleMs?: number;
  },
) {
  const { logger, metrics } = infra;
  const people = createPeople({
    connection: infra.mongo,
    redis: infra.redis,
    bull: infra.bull,
    queuePrefix: infra.queuePrefix,
    contacts: deps.contacts,
    media: deps.media,
    logger,
    settleMs: deps.settleMs ?? 3000,
    revokeLinks: (conversationId) => deps.revocations?.revoke(conversationId) ?? Promise.resolve(),
    logId: (identifier) => logIdOf(identifier, config.logIdSecret),
    mediaUrl: (conversationId, mediaId, ttlMs) => deps.links.mediaUrl(conversationId, mediaId, ttlMs),
  });
  // Resuming stops once the process drains (a resume in progress finishes its step; a lapsed lease lets another worker take it).
  infra.shutdown.addEventListener('abort', people.close, { once: true });
  const stores = { connection: infra.mongo, redis: infra.redis, database: infra.mongoLink.databaseName, queuePrefix: infra.queuePrefix };
  const purge = { purgeOlderThan: (cutoffOf: CutoffOf) => purgeByAge(stores, cutoffOf) };
  return {
    people,
    purgeTargets: { others: [purge] },
    router: createPeopleRouter({ adminToken: config.adminToken, people, logger, metrics }),
    start: people.start,
  };
}
