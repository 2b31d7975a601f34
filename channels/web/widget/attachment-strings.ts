/**
 * The attach button's, the previews' and the upload errors' words, from the widget's catalogue
 * (`strings.ts`) for the language it speaks.
 */
import { fill, type Catalogue } from './strings.js';

export interface AttachmentStrings {
  attach: string;
  remove(name: string): string;
  uploading(name: string): string;
  uploaded(name: string): string;
  tooBig(maxBytes: number | undefined): string;
  wrongType: string;
  uploadFailed: string;
  waitForUpload: string;
  dropHere: string;
  attachmentsLabel: string;
}

const megabytes = (bytes: number): string => `${Math.max(1, Math.floor(bytes / (1024 * 1024)))} MB`;

export function attachmentStringsFrom(words: Catalogue): AttachmentStrings {
  return {
    ...words,
    remove: (name) => fill(words.remove, { name }),
    uploading: (name) => fill(words.uploading, { name }),
    uploaded: (name) => fill(words.uploaded, { name }),
    tooBig: (maxBytes) => (maxBytes === undefined ? words.tooBigAny : fill(words.tooBig, { size: megabytes(maxBytes) })),
  };
}
