/**
 * The attachments of a message the visitor sent, above its bubble: a photo's thumbnail (a button
 * opening it in the viewer, photo-viewer.ts), a document's name (a link once it has one: from the
 * history, or from the upload's answer).
 */
import { element, icon } from './dom.js';
import { openPhotoViewer } from './photo-viewer.js';
import { fill } from './strings.js';

/** An uploaded attachment, as a sent message shows it. */
export interface SentAttachment {
  id: string;
  name: string;
  kind: 'image' | 'document';
  /** The file itself (just sent from this page), for its thumbnail. */
  file?: Blob;
  /** Its signed link (from the history), for the thumbnail and to open it. */
  url?: string;
}

const THUMBNAIL_PX = 320;

/**
 * An image's thumbnail drawn on a canvas from its bytes: no blob: or remote URL in an
 * <img>, so a page's `img-src` policy can't break it (the bytes of a history link come by fetch,
 * as every call to the service does). Undecodable or unreachable: `fallback` is shown instead.
 */
export function thumbnail(source: Blob | string, label: string, fallback: () => Node, onBytes?: (blob: Blob) => void): HTMLCanvasElement {
  const canvas = element('canvas', { className: 'thumbnail', attributes: { role: 'img', 'aria-label': label, width: '0', height: '0' } });
  void (async () => {
    try {
      const blob =
        typeof source === 'string'
          ? await fetch(source, { credentials: 'omit' }).then((response) => (response.ok ? response.blob() : Promise.reject(new Error())))
          : source;
      const bitmap = await createImageBitmap(blob);
      // Drawn THUMBNAIL_PX on its long side (a very small image scaled up), shown at its own aspect ratio.
      const scale = THUMBNAIL_PX / Math.max(bitmap.width, bitmap.height);
      canvas.width = Math.max(1, Math.round(bitmap.width * scale));
      canvas.height = Math.max(1, Math.round(bitmap.height * scale));
      canvas.getContext('2d')?.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
      bitmap.close();
      canvas.classList.add('drawn');
      onBytes?.(blob);
    } catch {
      canvas.replaceWith(fallback());
    }
  })();
  return canvas;
}

/** Draws a sent message's attachments above its bubble (a photo opens in the viewer, a document is its link); a message of attachments only shows no empty bubble. */
export function showSentAttachments(
  wrapper: HTMLElement,
  attachments: readonly SentAttachment[],
  textless: boolean,
  words: { viewPhoto: string; closeViewer: string; downloadPhoto: string },
): void {
  if (attachments.length === 0) return;
  const file = (attachment: SentAttachment): HTMLElement => {
    const content = [icon('document'), element('span', { text: attachment.name, attributes: { dir: 'auto' } })];
    // A signed link opens the file (a PDF downloads): from the history, or from the upload's answer.
    return attachment.url
      ? element('a', { className: 'sent-file', attributes: { href: attachment.url, target: '_blank', rel: 'noopener noreferrer' } }, content)
      : element('span', { className: 'sent-file' }, content);
  };
  const photo = (attachment: SentAttachment, source: Blob | string): HTMLElement => {
    // Keyboard reachable; opens once its bytes are there (the viewer draws from them: no second request).
    const button = element('button', {
      className: 'photo',
      attributes: { type: 'button', 'aria-label': fill(words.viewPhoto, { name: attachment.name }), disabled: '' },
    });
    let bytes: Blob | undefined;
    const canvas = thumbnail(
      source,
      attachment.name,
      () => {
        button.replaceWith(file(attachment));
        return document.createTextNode('');
      },
      (blob) => {
        bytes = blob;
        button.disabled = false;
      },
    );
    button.append(canvas);
    button.addEventListener('click', () => {
      if (bytes) void openPhotoViewer(bytes, attachment.name, { close: words.closeViewer, download: words.downloadPhoto }, button);
    });
    return button;
  };
  const figures = attachments.map((attachment) => {
    const source = attachment.file ?? attachment.url;
    return attachment.kind === 'image' && source ? photo(attachment, source) : file(attachment);
  });
  wrapper.prepend(element('div', { className: 'sent-attachments' }, figures));
  const bubble = wrapper.querySelector<HTMLElement>('.message.visitor');
  if (textless && bubble) bubble.hidden = true;
}
