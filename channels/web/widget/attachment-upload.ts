/**
 * Sends one file to the service's upload endpoint with XMLHttpRequest (fetch reports no upload
 * progress), as the raw body with the visitor's token, and reads the answer as the widget's
 * other calls do: a result, never a throw. Before anything is sent the file's size is checked
 * against the site's cap and its first bytes against the kinds the service accepts, so a
 * visitor learns at once that a file can't go; the service checks both again by itself.
 */
import type { ApiResult } from './api.js';

export interface UploadedFile {
  id: string;
  contentType: string;
  /** A link signed for the file (absolute), when the service gives one: a sent PDF opens from it at once. */
  url?: string;
}

export type FileCheck = { ok: true; kind: 'image' | 'document' } | { ok: false; reason: 'too_big' | 'wrong_type' };

// The kinds the service accepts, by their first bytes (a courtesy check: the service decides).
const SIGNATURES: readonly { bytes: readonly (number | undefined)[]; kind: 'image' | 'document' }[] = [
  { bytes: [0xff, 0xd8, 0xff], kind: 'image' },
  { bytes: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], kind: 'image' },
  // RIFF????WEBP
  { bytes: [0x52, 0x49, 0x46, 0x46, undefined, undefined, undefined, undefined, 0x57, 0x45, 0x42, 0x50], kind: 'image' },
  { bytes: [0x47, 0x49, 0x46, 0x38], kind: 'image' },
  { bytes: [0x25, 0x50, 0x44, 0x46, 0x2d], kind: 'document' },
];

/** Whether the service will take `file`: its size against `maxBytes`, its kind by its first bytes. */
export async function checkFile(file: Blob, maxBytes: number | undefined): Promise<FileCheck> {
  if (maxBytes !== undefined && file.size > maxBytes) return { ok: false, reason: 'too_big' };
  const head = new Uint8Array(await file.slice(0, 12).arrayBuffer());
  const match = SIGNATURES.find((signature) => signature.bytes.every((byte, index) => byte === undefined || head[index] === byte));
  return match ? { ok: true, kind: match.kind } : { ok: false, reason: 'wrong_type' };
}

const record = (value: unknown): Record<string, unknown> => (typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {});

/** Uploads `file` to `url`; `onProgress` gets the fraction sent (0–1). Aborting resolves to a network failure. */
export function uploadFile(
  url: string,
  token: string,
  file: Blob,
  onProgress: (fraction: number) => void,
  signal: AbortSignal,
): Promise<ApiResult<UploadedFile>> {
  return new Promise((resolve) => {
    const request = new XMLHttpRequest();
    request.open('POST', url);
    request.setRequestHeader('Authorization', `Bearer ${token}`);
    request.setRequestHeader('Content-Type', 'application/octet-stream');
    request.responseType = 'json';
    request.upload.addEventListener('progress', (event) => {
      if (event.lengthComputable && event.total > 0) onProgress(event.loaded / event.total);
    });
    request.addEventListener('load', () => {
      const body = record(request.response);
      if (request.status >= 200 && request.status < 300 && typeof body.id === 'string' && typeof body.contentType === 'string') {
        // A path on the service that took the upload, never another origin.
        const link = typeof body.url === 'string' && body.url.startsWith('/api/widget/media/') ? { url: `${new URL(url).origin}${body.url}` } : {};
        resolve({ ok: true, value: { id: body.id, contentType: body.contentType, ...link } });
        return;
      }
      const retryAfter = Number(request.getResponseHeader('Retry-After'));
      resolve({
        ok: false,
        kind: 'status',
        status: request.status,
        error: typeof body.error === 'string' ? body.error : `HTTP ${request.status}`,
        ...(retryAfter > 0 ? { retryAfterSeconds: retryAfter } : {}),
      });
    });
    const failed = (): void => resolve({ ok: false, kind: 'network' });
    request.addEventListener('error', failed);
    request.addEventListener('abort', failed);
    request.addEventListener('timeout', failed);
    signal.addEventListener('abort', () => request.abort(), { once: true });
    request.send(file);
  });
}
