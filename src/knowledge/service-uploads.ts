/**
 * What an owner adds by hand: FAQ entries (question and answer as one short document) and
 * uploaded documents (PDF and HTML read in the extract worker within its budget, plain text as
 * it is); each goes into the library under a new id.
 */
import { MediaRejectedError } from '../media/content-check.js';
import { checkDocument } from './extract.js';
import { readHtml, readPdf } from './extract-guard.js';
import { newId, type KnowledgeLibrary } from './library.js';

export interface DocumentUpload {
  bytes: Uint8Array;
  contentType: string;
  title?: string | undefined;
  filename?: string | undefined;
  url?: string | undefined;
  sites?: string[] | undefined;
}

export interface FaqInput {
  question: string;
  answer: string;
  url?: string | undefined;
  sites?: string[] | undefined;
}

export function createUploads(library: KnowledgeLibrary) {
  return {
    async addFaq(entries: readonly FaqInput[]) {
      const added: { id: string; chunks: number; dropped: number }[] = [];
      for (const entry of entries) {
        const id = newId('faq');
        const result = await library.put({
          ownerId: `doc:${id}`,
          kind: 'faq',
          title: entry.question,
          url: entry.url ?? '',
          text: `# ${entry.question}\n\n${entry.answer}`,
          sites: entry.sites ?? [],
        });
        added.push({ id, chunks: result.chunks, dropped: result.dropped });
      }
      return added;
    },

    async addDocument(upload: DocumentUpload) {
      const checked = checkDocument(upload.contentType, upload.bytes);
      let text = checked.text ?? '';
      let title = upload.title ?? upload.filename ?? 'Document';
      if (checked.kind === 'pdf') text = (await readPdf(upload.bytes)).text;
      if (checked.kind === 'html') {
        const page = await readHtml(text, upload.url ?? 'https://document.invalid/');
        text = page.text;
        title = upload.title ?? (page.title || title);
      }
      if (!text.trim()) throw new MediaRejectedError('unreadable', 'the document holds no text');
      const id = newId('doc');
      const result = await library.put({
        ownerId: `doc:${id}`,
        kind: 'document',
        title,
        url: upload.url ?? '',
        text,
        sites: upload.sites ?? [],
        extra: { bytes: upload.bytes.length, contentType: upload.contentType },
      });
      return { id, kind: checked.kind, chunks: result.chunks, dropped: result.dropped };
    },
  };
}
