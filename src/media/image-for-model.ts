/**
 * A photo as the model gets it: an image larger than the model uses (longest side over
 * MODEL_IMAGE_MAX_SIDE, or heavier than PASS_THROUGH_BYTES) is decoded and downscaled with sharp
 * (libvips) and sent as a JPEG, so a 16 MiB photo costs the model request a few hundred KiB.
 * Bytes sharp cannot decode as an image (a damaged file, a signature with nothing behind it,
 * more pixels than `LIMIT_INPUT_PIXELS`: a decompression bomb) are refused as `unreadable`;
 * they never reach the model.
 */
import type Sharp from 'sharp';
import { loadOnce } from '../load-once.js';
import { MediaRejectedError } from './content-check.js';

/** The longest side the model resolves (larger images are scaled down by the provider anyway). */
export const MODEL_IMAGE_MAX_SIDE = 1568;
/** An image within MODEL_IMAGE_MAX_SIDE and this size is sent as it is. */
const PASS_THROUGH_BYTES = 1024 * 1024;
/** More pixels than a 100-megapixel photo is refused before decoding. */
const LIMIT_INPUT_PIXELS = 100_000_000;
const JPEG_QUALITY = 80;

/** sharp, loaded with the first photo: a process that never sees one never pays for libvips at start-up. */
const loadSharp = loadOnce(async (): Promise<typeof Sharp> => {
  const { default: sharp } = await import('sharp');
  // No libvips operation cache (it would hold decoded images after the turn) and one thread per
  // image: the worker's memory stays what its turns hold, and a decode does not take every core.
  sharp.cache(false);
  sharp.concurrency(1);
  return sharp;
});

export interface ModelImage {
  bytes: Uint8Array;
  contentType: string;
}

/** The image to send the model for `bytes` (of the sniffed `contentType`); throws `MediaRejectedError('unreadable')`. */
export async function imageForModel(bytes: Uint8Array, contentType: string): Promise<ModelImage> {
  const options = { limitInputPixels: LIMIT_INPUT_PIXELS, sequentialRead: true, failOn: 'error' as const };
  const sharp = await loadSharp();
  try {
    const { width = 0, height = 0 } = await sharp(bytes, options).metadata();
    if (width === 0 || height === 0) throw new Error('the image has no size');
    if (Math.max(width, height) <= MODEL_IMAGE_MAX_SIDE && bytes.byteLength <= PASS_THROUGH_BYTES) return { bytes, contentType };
    const scaled = await sharp(bytes, options)
      .rotate()
      .resize({ width: MODEL_IMAGE_MAX_SIDE, height: MODEL_IMAGE_MAX_SIDE, fit: 'inside', withoutEnlargement: true })
      .flatten({ background: '#ffffff' })
      .jpeg({ quality: JPEG_QUALITY })
      .toBuffer();
    return { bytes: scaled, contentType: 'image/jpeg' };
  } catch (error) {
    throw new MediaRejectedError('unreadable', `the image could not be decoded: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}
