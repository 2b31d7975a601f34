/**
 * The content check every stored media passes: the first bytes decide the type, and they must
 * be an allowed type of the kind the sender declared — a file name or a header alone never is.
 */
import { describe, expect, test } from '@jest/globals';
import { checkContent, MediaRejectedError } from '../../src/media/content-check.js';
import { JPEG_BYTES, OGG_BYTES, PDF_BYTES, PNG_BYTES } from '../support/media-fixtures.js';

describe('content check', () => {
  test.each([
    ['image/jpeg', JPEG_BYTES, 'image/jpeg', 'image'],
    ['image/png', PNG_BYTES, 'image/png', 'image'],
    ['application/pdf', PDF_BYTES, 'application/pdf', 'document'],
    ['audio/ogg; codecs=opus', OGG_BYTES, 'audio/ogg', 'audio'],
    // A declared subtype of the right kind is corrected to what the bytes are.
    ['image/jpeg', PNG_BYTES, 'image/png', 'image'],
  ])('%s with matching bytes is accepted as what the bytes are', (declared, bytes, contentType, kind) => {
    expect(checkContent(declared, bytes)).toEqual({ contentType, kind });
  });

  test.each([
    ['a PDF declared as a photo', 'image/png', PDF_BYTES],
    ['a script declared as a PDF', 'application/pdf', Buffer.from('#!/bin/sh\nrm -rf /\n')],
    ['a type that is not on the allowlist', 'application/zip', Buffer.from('PK\u0003\u0004rest-of-zip')],
    ['an empty file', 'image/png', Buffer.alloc(0)],
  ])('%s is refused as an unsupported type', (_name, declared, bytes) => {
    const refused = (() => {
      try {
        return checkContent(declared, bytes);
      } catch (error) {
        return error;
      }
    })();
    expect(refused).toBeInstanceOf(MediaRejectedError);
    expect((refused as MediaRejectedError).reason).toBe('unsupported-type');
  });
});
