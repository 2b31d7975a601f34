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
