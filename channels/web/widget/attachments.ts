/**
 * Attachments in the composer: an attach button (a real <button>, so Tab reaches it and Enter
 * or Space opens the file picker), dropping files on the panel, and a tray of previews above
 * the composer — an image's thumbnail or a PDF's name — each with its upload progress, a plain
 * error when the file can't go (too big, wrong kind) and a remove button. A file is uploaded as
 * soon as it is attached; the message then names the uploaded ids (sent-attachments.ts draws
 * them on the message). It never reads a file whole: only its first bytes are checked.
 */
import type { ApiResult } from './api.js';
import type { AttachmentStrings } from './attachment-strings.js';
import { checkFile, type UploadedFile } from './attachment-upload.js';
import { element, icon, screenReaderText } from './dom.js';
import { thumbnail, type SentAttachment } from './sent-attachments.js';

export type Upload = (file: File, onProgress: (fraction: number) => void, signal: AbortSignal) => Promise<ApiResult<UploadedFile>>;

export interface AttachmentsOptions {
  strings: AttachmentStrings;
  maxBytes: number | undefined;
  upload: Upload;
}

export interface Attachments {
  /** The attach button, for the composer. */
  readonly button: HTMLButtonElement;
  /** The previews, shown above the composer while there are any. */
  readonly tray: HTMLElement;
  /** Lets files be dropped onto `target` (the panel). */
  acceptDrops(target: HTMLElement): void;
  /** True while a file is still uploading. */
  uploading(): boolean;
  /** True when an uploaded attachment waits to be sent. */
  ready(): boolean;
  /** The uploaded attachments, taken out of the tray (failed ones stay there until removed). */
  take(): SentAttachment[];
  /** Empties the tray (a new chat), cancelling uploads. */
  clear(): void;
  /**
   * A message is sent while files upload: the tray's files go with it (out of the tray, still
   * uploading); resolves with the uploaded ones once none is uploading, `onProgress` told their
   * overall fraction meanwhile. A file that fails comes back to the tray with its error.
   */
  handOver(onProgress: (fraction: number) => void): Promise<SentAttachment[]>;
  /** Files pasted into `target` (the message box) are attached. */
  acceptPaste(target: HTMLElement): void;
}

interface Item {
  file: File;
  element: HTMLElement;
  kind: 'image' | 'document' | undefined;
  state: 'checking' | 'uploading' | 'ready' | 'failed';
  id: string | undefined;
  /** Its signed link, once uploaded (when the service gives one). */
  url?: string;
  controller: AbortController;
  /** Uploaded so far (0–1). */
  fraction: number;
  /** Resolves when it is uploaded, failed or removed. */
  done: Promise<void>;
  /** Told of progress and of the end (a message it was handed over to). */
  watch?: () => void;
}

const ACCEPT = 'image/jpeg,image/png,image/webp,image/gif,application/pdf,.pdf';

function failureText(strings: AttachmentStrings, result: ApiResult<UploadedFile>, maxBytes: number | undefined): string {
  if (result.ok || result.kind === 'network') return strings.uploadFailed;
  if (result.status === 413) return strings.tooBig(maxBytes);
  if (result.status === 415) return strings.wrongType;
  return strings.uploadFailed;
}

/** A file's entry in the tray (preview, name, progress, status, remove) and `start`, which checks and uploads it. */
function attachItem(
  file: File,
  options: AttachmentsOptions,
  tray: { remove(item: Item): void; focusAttach(): void; changed(): void },
): { item: Item; start(): void } {
  const { strings, maxBytes } = options;
  const name = file.name || 'file';
  const status = element('span', { className: 'attachment-status', attributes: { role: 'status' } });
  const progress = element('progress', { className: 'attachment-progress', attributes: { max: '100', value: '0', 'aria-label': strings.uploading(name) } });
  const removeButton = element(
    'button',
    { className: 'attachment-remove', attributes: { type: 'button', 'aria-label': strings.remove(name), title: strings.remove(name) } },
    [icon('close')],
  );
  const preview = element('span', { className: 'attachment-preview' });
  const label = element('span', { className: 'attachment-name', text: name });
  const entry = element('li', { className: 'attachment uploading' }, [
    preview,
    element('span', { className: 'attachment-body' }, [label, progress, status]),
    removeButton,
  ]);
  let finish = (): void => undefined;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const item: Item = { file, element: entry, kind: undefined, state: 'checking', id: undefined, controller: new AbortController(), fraction: 0, done };
  const ended = (): void => {
    item.watch?.();
    finish();
  };
  item.controller.signal.addEventListener('abort', ended);
  removeButton.addEventListener('click', () => {
    tray.remove(item);
    tray.focusAttach();
  });

  const fail = (text: string): void => {
    item.state = 'failed';
    tray.changed();
    entry.classList.remove('uploading');
    entry.classList.add('failed');
    progress.hidden = true;
    status.textContent = text;
    ended();
  };

  const start = async (): Promise<void> => {
    const check = await checkFile(file, maxBytes);
    if (!check.ok) {
      fail(check.reason === 'too_big' ? strings.tooBig(maxBytes) : strings.wrongType);
      return;
    }
    item.kind = check.kind;
    preview.append(check.kind === 'image' ? thumbnail(file, '', () => icon('document')) : icon('document'));
    if (item.controller.signal.aborted) return;
    item.state = 'uploading';
    const result = await options.upload(
      file,
      (fraction) => {
        item.fraction = fraction;
        progress.value = Math.round(fraction * 100);
        item.watch?.();
      },
      item.controller.signal,
    );
    if (item.controller.signal.aborted) return;
    if (!result.ok) {
      fail(failureText(strings, result, maxBytes));
      return;
    }
    item.state = 'ready';
    tray.changed();
    item.id = result.value.id;
    item.url = result.value.url;
    progress.value = 100;
    entry.classList.remove('uploading');
    entry.classList.add('ready');
    status.append(screenReaderText(strings.uploaded(name)));
    ended();
  };
  return { item, start: () => void start() };
}

/** Files dropped onto `target` (the panel) are attached; a hint covers it while files are dragged over. */
function acceptDroppedFiles(target: HTMLElement, dropHere: string, addFiles: (files: FileList | null) => void): void {
  const hasFiles = (event: DragEvent): boolean => Array.from(event.dataTransfer?.types ?? []).includes('Files');
  const hint = element('div', { className: 'drop-hint', text: dropHere, attributes: { hidden: '', 'aria-hidden': 'true' } });
  target.append(hint);
  let depth = 0;
  const show = (visible: boolean): void => {
    hint.hidden = !visible;
  };
  target.addEventListener('dragenter', (event) => {
    if (!hasFiles(event)) return;
    event.preventDefault();
    depth += 1;
    show(true);
  });
  target.addEventListener('dragover', (event) => {
    if (!hasFiles(event)) return;
    event.preventDefault();
    if (event.dataTransfer) event.dataTransfer.dropEffect = 'copy';
  });
  target.addEventListener('dragleave', () => {
    depth = Math.max(0, depth - 1);
    if (depth === 0) show(false);
  });
  target.addEventListener('drop', (event) => {
    if (!hasFiles(event)) return;
    event.preventDefault();
    depth = 0;
    show(false);
    addFiles(event.dataTransfer?.files ?? null);
  });
}

const sentOf = (item: Item): SentAttachment => ({
  id: item.id ?? '',
  name: item.file.name || 'file',
  kind: item.kind ?? 'document',
  file: item.file,
  url: item.url,
});

export function createAttachments(options: AttachmentsOptions): Attachments {
  const { strings } = options;
  let items: Item[] = [];

  const picker = element('input', {
    className: 'file-picker',
    attributes: { type: 'file', accept: ACCEPT, multiple: '', tabindex: '-1', 'aria-hidden': 'true', hidden: '' },
  });
  const button = element('button', { className: 'icon-button attach', attributes: { type: 'button', 'aria-label': strings.attach, title: strings.attach } }, [
    icon('attach'),
  ]);
  const list = element('ul', { className: 'attachment-list', attributes: { 'aria-label': strings.attachmentsLabel } });
  const tray = element('div', { className: 'attachments', attributes: { hidden: '' } }, [list, picker]);

  const updateTray = (): void => {
    tray.hidden = items.length === 0;
  };

  const uploading = (): boolean => items.some((item) => item.state === 'checking' || item.state === 'uploading');
  const remove = (item: Item): void => {
    item.controller.abort();
    item.element.remove();
    items = items.filter((other) => other !== item);
    updateTray();
  };

  const add = (file: File): void => {
    const { item, start } = attachItem(file, options, {
      remove,
      focusAttach: () => button.focus(),
      changed: updateTray,
    });
    items.push(item);
    list.append(item.element);
    updateTray();
    start();
  };

  const addFiles = (files: FileList | null): void => {
    for (const file of Array.from(files ?? [])) add(file);
  };

  button.addEventListener('click', () => picker.click());
  picker.addEventListener('change', () => {
    addFiles(picker.files);
    // The same file may be picked again after it was removed.
    picker.value = '';
  });

  return {
    button,
    tray,
    acceptDrops: (target) => acceptDroppedFiles(target, strings.dropHere, addFiles),
    uploading,
    async handOver(onProgress) {
      const handed = items.filter((item) => item.state !== 'failed');
      items = items.filter((item) => item.state === 'failed');
      for (const item of handed) item.element.remove();
      updateTray();
      const report = (): void => onProgress(handed.reduce((sum, item) => sum + (item.state === 'ready' ? 1 : item.fraction), 0) / handed.length);
      for (const item of handed) item.watch = report;
      report();
      await Promise.all(handed.map((item) => item.done));
      for (const item of handed) {
        if (item.state !== 'failed' || item.controller.signal.aborted) continue;
        // It failed on its way: back in the tray, with its error, to be removed or sent again.
        items.push(item);
        list.append(item.element);
      }
      updateTray();
      return handed.filter((item) => item.state === 'ready').map(sentOf);
    },
    acceptPaste(target) {
      target.addEventListener('paste', (event) => {
        const files = event.clipboardData?.files;
        if (!files || files.length === 0) return;
        event.preventDefault();
        addFiles(files);
      });
    },
    ready: () => items.some((item) => item.state === 'ready'),
    take() {
      const ready = items.filter((item) => item.state === 'ready');
      for (const item of ready) remove(item);
      return ready.map(sentOf);
    },
    clear() {
      for (const item of [...items]) remove(item);
    },
  };
}

export const ATTACHMENT_CSS = `
.composer .attach { width: 44px; height: 44px; color: var(--muted); }
.composer .attach:hover { background: var(--surface); }
.composer .attach:focus-visible, .attachment-remove:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.attachments { padding: 8px 12px 0; border-top: 1px solid var(--line); background: var(--bg); }
.attachment-list { display: flex; flex-direction: column; gap: 6px; margin: 0; padding: 0; list-style: none; }
.attachment { display: flex; align-items: center; gap: 10px; padding: 6px 8px; border: 1px solid var(--line); border-radius: 10px; font-size: 13px; }
.attachment.failed { border-color: var(--danger); }
.attachment-preview { flex: none; width: 40px; height: 40px; display: grid; place-items: center; border-radius: 6px; overflow: hidden; background: var(--surface); color: var(--muted); }
.attachment-preview canvas { width: 100%; height: 100%; object-fit: cover; }
.attachment-preview svg, .sent-file svg { width: 20px; height: 20px; }
.attachment-body { flex: 1; min-width: 0; display: flex; flex-direction: column; gap: 4px; }
.attachment-name { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.attachment-progress { width: 100%; height: 6px; accent-color: var(--accent); }
.attachment.ready .attachment-progress { display: none; }
.upload-progress { width: 64px; height: 6px; accent-color: var(--accent); }
.attachment-status { color: var(--danger); }
.attachment-status:empty { display: none; }
.attachment-remove { flex: none; width: 28px; height: 28px; padding: 0; border: 0; border-radius: 8px; display: grid; place-items: center; background: transparent; color: var(--muted); cursor: pointer; }
.attachment-remove svg { width: 16px; height: 16px; }
.drop-hint { position: absolute; inset: 0; display: grid; place-items: center; padding: 24px; border: 3px dashed var(--accent); border-radius: inherit; background: var(--bg); color: var(--text); font-weight: 600; text-align: center; pointer-events: none; }
.sent-attachments { display: flex; flex-wrap: wrap; justify-content: flex-end; gap: 6px; }
.sent-attachments .thumbnail { display: block; max-width: 200px; max-height: 160px; border-radius: 12px; box-shadow: 0 0 0 1px var(--line); }
.photo { padding: 0; border: 0; border-radius: 12px; background: none; cursor: zoom-in; }
.photo:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.viewer { position: fixed; inset: 0; z-index: 2147483001; display: flex; align-items: center; justify-content: center; padding: 60px 16px 16px; background: rgba(12, 17, 29, 0.94); }
.viewer-photo { max-width: 100%; max-height: 100%; min-width: 0; min-height: 0; border-radius: 8px; }
.viewer-bar { position: absolute; top: 10px; inset-inline-end: 10px; display: flex; align-items: center; gap: 12px; color: #fff; }
.viewer-download { color: #fff; font-weight: 600; text-decoration: underline; text-underline-offset: 2px; }
.viewer-bar :focus-visible { outline: 3px solid #fff; outline-offset: 2px; }
.sent-attachments .thumbnail:not(.drawn) { width: 120px; height: 90px; background: var(--surface); }
.sent-file { display: inline-flex; align-items: center; gap: 6px; padding: 8px 12px; border-radius: 12px; background: var(--bg); border: 1px solid var(--line); color: var(--text); font-size: 13px; }
a.sent-file:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
`;
