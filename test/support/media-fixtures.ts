/**
 * Small real media files for tests: each starts with its format's true signature, so the
 * service's content check (which sniffs the bytes) accepts it as that type.
 */
/** A 1×1 transparent PNG. */
export const PNG_BYTES = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');

/** The start of a JPEG (SOI + JFIF APP0), padded. */
export const JPEG_BYTES = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10]), Buffer.from('JFIF\0\x01\x01\0\0\x01\0\x01\0\0'), Buffer.alloc(64)]);

/** A minimal one-page PDF. */
export const PDF_BYTES = Buffer.from(
  '%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj 2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj 3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 3 3]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n',
);

/** An Ogg page header (a WhatsApp voice note is Ogg/Opus), padded. */
export const OGG_BYTES = Buffer.concat([Buffer.from('OggS\0\x02'), Buffer.alloc(8), Buffer.from('OpusHead'), Buffer.alloc(256, 1)]);
