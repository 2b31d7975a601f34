/**
 * The worker thread that reads pages and documents (`extract-guard.ts` starts it, with a time and
 * memory budget): one task at a time, HTML through `extractHtml`, PDF through `extractPdf`, the
 * page or a refusal (its reason and message) posted back. Nothing else runs here, so a file that
 * is slow or huge to read costs this thread, never the process's event loop.
 */
import { parentPort } from 'node:worker_threads';
import { MediaRejectedError } from '../media/content-check.js';
import { extractHtml, extractPdf } from './extract.js';
import type { ExtractReply, ExtractTask } from './extract-guard.js';

const reply = (message: ExtractReply) => parentPort?.postMessage(message);

parentPort?.on('message', (task: ExtractTask) => {
  const run = task.kind === 'html' ? extractHtml(task.html, task.url, task.robots) : extractPdf(task.bytes);
  run.then(
    (result) => reply({ id: task.id, ok: true, result }),
    (error: unknown) =>
      reply({
        id: task.id,
        ok: false,
        reason: error instanceof MediaRejectedError ? error.reason : 'unreadable',
        message: error instanceof Error ? error.message : 'the file could not be read',
      }),
  );
});
