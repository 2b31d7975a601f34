/**
 * A sent photo, large: drawn over the whole page (not only the panel) from the bytes its thumbnail
 * was drawn from (no new request, no blob: or remote URL in an <img>, so a page's `img-src` cannot
 * break it), at its own size where the window allows, else as large as it allows at its own aspect
 * ratio, with a link saving the photo under its name. A dialog with a close button (focused on
 * open) and the download link, the only stops for Tab; Escape closes it (not the panel), and
 * focus goes back to the thumbnail.
 */
import { element, icon } from './dom.js';

/** The largest side a photo is drawn at (a phone photo's full size would cost tens of MB). */
const MAX_SIDE_PX = 2048;
/** A smaller photo is drawn this large (its pixels kept sharp), then fitted to the panel like any other. */
const MIN_SIDE_PX = 1024;

export async function openPhotoViewer(bytes: Blob, name: string, labels: { close: string; download: string }, opener: HTMLElement): Promise<void> {
  // The widget's root in its shadow root: the viewer covers the page, whatever the panel's size.
  const root = opener.closest('.root');
  if (!root || root.querySelector('.viewer')) return;
  const bitmap = await createImageBitmap(bytes);
  const side = Math.max(bitmap.width, bitmap.height);
  const scale = Math.min(MAX_SIDE_PX / side, Math.max(1, MIN_SIDE_PX / side));
  const width = Math.max(1, Math.round(bitmap.width * scale));
  const height = Math.max(1, Math.round(bitmap.height * scale));
  const canvas = element('canvas', {
    className: 'viewer-photo',
    attributes: { role: 'img', 'aria-label': name, width: String(width), height: String(height) },
  });
  const context = canvas.getContext('2d');
  if (context) {
    context.imageSmoothingEnabled = scale <= 1;
    context.drawImage(bitmap, 0, 0, width, height);
  }
  bitmap.close();
  const close = element('button', { className: 'icon-button viewer-close', attributes: { type: 'button', title: labels.close } }, [icon('close')]);
  const href = URL.createObjectURL(bytes);
  const download = element('a', { className: 'viewer-download', text: labels.download, attributes: { href, download: name } });
  const viewer = element('div', { className: 'viewer', attributes: { role: 'dialog', 'aria-modal': 'true', 'aria-label': name } }, [
    element('div', { className: 'viewer-bar' }, [download, close]),
    canvas,
  ]);
  const dismiss = (): void => {
    viewer.remove();
    URL.revokeObjectURL(href);
    opener.focus();
  };
  close.addEventListener('click', dismiss);
  viewer.addEventListener('click', (event) => {
    if (event.target === viewer) dismiss();
  });
  viewer.addEventListener('keydown', (event) => {
    if (event.key !== 'Escape' && event.key !== 'Tab') return;
    event.preventDefault();
    event.stopPropagation();
    if (event.key === 'Escape') dismiss();
    // Tab and Shift+Tab go between the two controls.
    else ((viewer.getRootNode() as ShadowRoot).activeElement === close ? download : close).focus();
  });
  root.append(viewer);
  close.focus();
}
