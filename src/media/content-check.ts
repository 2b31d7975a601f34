/**
 * What kinds of media the assistant understands, decided by the bytes, not by the sender's
 * header or a file name: the first bytes are sniffed (magic numbers) and must name a type on
 * the allowlist, of the same kind as the declared type. Anything else is refused as
 * `unsupported-type`. Used by the media store for every stored file (WhatsApp fetches and
 * widget uploads alike).
 */
import { z } from 'zod';
import { AppError } from '../errors/index.js';

/** How the turn uses a media: images and PDFs reach the model as parts, audio is transcribed. */
export const MEDIA_KINDS = ['image', 'audio', 'document'] as const;
export type MediaKind = (typeof MEDIA_KINDS)[number];

/** Why a media could not be used; each has its own reply to the customer. */
export const MEDIA_FAILURES = [
  'too-large',
  'unsupported-type',
  'download-failed',
  'download-timeout',
  'transcription-failed',
  'too-many-voice-notes',
  // An image that cannot be decoded (damaged, or not an image behind its signature).
  'unreadable',
  // Left out: the turn's media bytes (MEDIA_MAX_TURN_BYTES) were used up by the files before it.
  'over-turn-limit',
] as const;
export type MediaFailure = (typeof MEDIA_FAILURES)[number];

/**
 * One stored media reference as records and events carry it (a store id, its kinds, a voice
 * note's transcription, why a file was not used): a plain object, so a field it does not know is
 * dropped (`MediaReference` in `inbound-media.ts` has no room for extras).
 */
export const MediaReferenceSchema = z.object({
  id: z.string().optional(),
  contentType: z.string(),
  kind: z.enum(MEDIA_KINDS).optional(),
  size: z.number().optional(),
  filename: z.string().optional(),
  transcription: z.string().optional(),
  error: z.enum(MEDIA_FAILURES).optional(),
});

/** A media refused or lost for a reason the same request would meet again: never retried. */
export class MediaRejectedError extends AppError {
  constructor(
    readonly reason: MediaFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Bytes the sniffer needs to recognise every allowed type. */
export const SNIFF_BYTES = 16;

interface Signature {
  contentType: string;
  kind: MediaKind;
  matches(head: Uint8Array): boolean;
}

const ascii = (head: Uint8Array, offset: number, text: string) =>
  head.length >= offset + text.length && [...text].every((char, index) => head[offset + index] === char.charCodeAt(0));

const bytes = (head: Uint8Array, values: readonly number[]) => head.length >= values.length && values.every((value, index) => head[index] === value);

/** The allowlist, by signature. Audio is what the transcription API takes (WhatsApp voice notes are Ogg/Opus). */
const SIGNATURES: readonly Signature[] = [
  { contentType: 'image/jpeg', kind: 'image', matches: (head) => bytes(head, [0xff, 0xd8, 0xff]) },
  { contentType: 'image/png', kind: 'image', matches: (head) => bytes(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) },
  { contentType: 'image/webp', kind: 'image', matches: (head) => ascii(head, 0, 'RIFF') && ascii(head, 8, 'WEBP') },
  { contentType: 'image/gif', kind: 'image', matches: (head) => ascii(head, 0, 'GIF87a') || ascii(head, 0, 'GIF89a') },
  { contentType: 'application/pdf', kind: 'document', matches: (head) => ascii(head, 0, '%PDF-') },
  { contentType: 'audio/ogg', kind: 'audio', matches: (head) => ascii(head, 0, 'OggS') },
  { contentType: 'audio/webm', kind: 'audio', matches: (head) => bytes(head, [0x1a, 0x45, 0xdf, 0xa3]) },
  { contentType: 'audio/wav', kind: 'audio', matches: (head) => ascii(head, 0, 'RIFF') && ascii(head, 8, 'WAVE') },
  {
    contentType: 'audio/mpeg',
    kind: 'audio',
    matches: (head) => ascii(head, 0, 'ID3') || (head.length >= 2 && head[0] === 0xff && ((head[1] ?? 0) & 0xe0) === 0xe0),
  },
  { contentType: 'audio/mp4', kind: 'audio', matches: (head) => ascii(head, 4, 'ftyp') },
];

/** Declared types accepted per kind (parameters such as `; codecs=opus` are ignored). */
const DECLARED_KINDS: Record<string, MediaKind> = {
  'image/jpeg': 'image',
  'image/jpg': 'image',
  'image/png': 'image',
  'image/webp': 'image',
  'image/gif': 'image',
  'application/pdf': 'document',
  'audio/ogg': 'audio',
  'audio/opus': 'audio',
  'audio/webm': 'audio',
  'audio/wav': 'audio',
  'audio/x-wav': 'audio',
  'audio/mpeg': 'audio',
  'audio/mp3': 'audio',
  'audio/mp4': 'audio',
  'audio/m4a': 'audio',
  'audio/x-m4a': 'audio',
  'audio/aac': 'audio',
};

/** A declared content type without parameters, lower case. */
function baseContentType(contentType: string): string {
  return (contentType.split(';')[0] ?? '').trim().toLowerCase();
}

/** The kind a declared content type claims, or undefined when it is not on the allowlist. */
export function declaredKind(contentType: string): MediaKind | undefined {
  return DECLARED_KINDS[baseContentType(contentType)];
}

/**
 * The type the bytes are, when it is on the allowlist and agrees with the declared kind; throws
 * `MediaRejectedError('unsupported-type')` otherwise.
 */
export function checkContent(declaredContentType: string, head: Uint8Array): { contentType: string; kind: MediaKind } {
  const claimed = declaredKind(declaredContentType);
  const found = SIGNATURES.find((signature) => signature.matches(head));
  if (!claimed || !found || found.kind !== claimed) {
    throw new MediaRejectedError(
      'unsupported-type',
      `unsupported media: declared ${baseContentType(declaredContentType) || '(none)'}, content ${found?.contentType ?? 'unrecognised'}`,
    );
  }
  return { contentType: found.contentType, kind: found.kind };
}
