/**
 * The attach button's, the previews' and the upload errors' words, in the languages the widget
 * speaks (kept beside `strings.ts` so attachments add no lines to the shared catalogue).
 */

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

const english: AttachmentStrings = {
  attach: 'Attach a photo or PDF',
  remove: (name) => `Remove ${name}`,
  uploading: (name) => `Uploading ${name}`,
  uploaded: (name) => `${name} is ready to send`,
  tooBig: (maxBytes) => (maxBytes === undefined ? 'That file is too big.' : `That file is too big. Files can be up to ${megabytes(maxBytes)}.`),
  wrongType: 'That kind of file is not supported. Send a photo (JPEG, PNG, WebP, GIF) or a PDF.',
  uploadFailed: 'The file could not be uploaded. Remove it and try again.',
  waitForUpload: 'Wait a moment: an attachment is still uploading.',
  dropHere: 'Drop a photo or PDF to attach it',
  attachmentsLabel: 'Attachments',
};

const spanish: AttachmentStrings = {
  attach: 'Adjuntar una foto o un PDF',
  remove: (name) => `Quitar ${name}`,
  uploading: (name) => `Subiendo ${name}`,
  uploaded: (name) => `${name} está listo para enviar`,
  tooBig: (maxBytes) =>
    maxBytes === undefined ? 'El archivo es demasiado grande.' : `El archivo es demasiado grande. El máximo es de ${megabytes(maxBytes)}.`,
  wrongType: 'Ese tipo de archivo no se admite. Envía una foto (JPEG, PNG, WebP, GIF) o un PDF.',
  uploadFailed: 'No se pudo subir el archivo. Quítalo y vuelve a intentarlo.',
  waitForUpload: 'Espera un momento: todavía se está subiendo un archivo.',
  dropHere: 'Suelta una foto o un PDF para adjuntarlo',
  attachmentsLabel: 'Archivos adjuntos',
};

/** The attachment words for a language `chooseLanguage` picked (English when there are none). */
export function attachmentStringsFor(language: string): AttachmentStrings {
  return language === 'es' ? spanish : english;
}
