/**
 * Customers' media as a feature: the store (GridFS), the uploads waiting for the message that
 * names them, and the intake that fetches, stores, downscales and transcribes a turn's media
 * from the sources the enabled channels give (the composition root names them).
 */
import type { Config } from '../config.js';
import type { Infrastructure } from '../infrastructure.js';
import { createMediaIntake, type MediaIntakeOptions } from './inbound-media.js';
import { createMediaStore } from './media-store.js';
import { createOpenAITranscriber } from './transcribe.js';
import { createUploadClaims } from './upload-claims.js';

export function createMediaFeature(infra: Infrastructure, config: Pick<Config, 'media' | 'model'>, sources: MediaIntakeOptions['sources']) {
  const { media } = config;
  const store = createMediaStore(infra.mongo, { maxBytes: media.maxBytes });
  const uploadClaims = createUploadClaims(infra.redis, { unclaimedTtlMs: media.unclaimedTtlMs, database: infra.mongoLink.databaseName });
  const intake = createMediaIntake({
    store,
    sources,
    transcribe: createOpenAITranscriber({ openai: config.model.providers.openai, model: media.transcribeModel }),
    maxBytes: media.maxBytes,
    maxTurnBytes: media.maxTurnBytes,
    maxWorkerBytes: media.maxWorkerBytes,
    fetchTimeoutMs: media.fetchTimeoutMs,
    transcribeTimeoutMs: config.model.timeoutMs,
    logger: infra.logger,
    metrics: infra.metrics,
  });
  return {
    store,
    uploadClaims,
    intake,
    /** What a channel gets: the widget's uploads go to the store, waiting for the message that names them. */
    forChannels: { media: store, uploadClaims },
    /** What the retention purge sweeps: the media of purged conversations, and uploads no message named. */
    purgeTargets: { media: store, uploads: { claims: uploadClaims, unclaimedTtlMs: media.unclaimedTtlMs } },
  };
}
