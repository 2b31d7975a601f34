/** Customers' media: fetched by the worker, stored in GridFS, voice notes transcribed. */
import { z } from 'zod';
import { positiveInt } from './fields.js';

export const mediaFields = {
  // Customers' media (issue 13): fetched by the worker, stored in GridFS, voice notes transcribed.
  MEDIA_MAX_BYTES: positiveInt(16 * 1024 * 1024),
  MEDIA_FETCH_TIMEOUT_MS: positiveInt(15_000),
  // Media bytes one turn sends the model (after images are downscaled), and all turns of one worker process at once.
  MEDIA_MAX_TURN_BYTES: positiveInt(24 * 1024 * 1024),
  MEDIA_MAX_WORKER_BYTES: positiveInt(48 * 1024 * 1024),
  MODEL_TRANSCRIBE: z.string().min(1).default('gpt-4o-mini-transcribe'),
};

/**
 * Customers' media: the cap per file (download and upload), the fetch deadline, the transcription
 * model, the media bytes per turn and per worker process sent to the model, and how long an
 * upload no message named is kept.
 */
export interface MediaConfig {
  maxBytes: number;
  fetchTimeoutMs: number;
  transcribeModel: string;
  maxTurnBytes: number;
  maxWorkerBytes: number;
  unclaimedTtlMs: number;
}

type MediaEnv = z.infer<z.ZodObject<typeof mediaFields>> & { UPLOAD_UNCLAIMED_TTL_MINUTES: number };

export const mediaConfig = (env: MediaEnv): MediaConfig => ({
  maxBytes: env.MEDIA_MAX_BYTES,
  fetchTimeoutMs: env.MEDIA_FETCH_TIMEOUT_MS,
  transcribeModel: env.MODEL_TRANSCRIBE,
  maxTurnBytes: env.MEDIA_MAX_TURN_BYTES,
  maxWorkerBytes: Math.max(env.MEDIA_MAX_WORKER_BYTES, env.MEDIA_MAX_TURN_BYTES),
  unclaimedTtlMs: Math.round(env.UPLOAD_UNCLAIMED_TTL_MINUTES * 60_000),
});
