/**
 * The process's side of hand-off notices: `start()` runs the notice worker and queues again the
 * notices a crash left pending (`notice-recovery.ts`), once per process whichever caller comes
 * first; `close()` waits for the recovery and stops the worker.
 */
import type { Worker } from 'bullmq';
import { createNoticeWorker, type NoticeJob, type NoticeQueue, type NoticeWorkerOptions } from './notice-queue.js';
import { requeueStrandedNotices } from './notice-recovery.js';

export function createNoticeDelivery(options: NoticeWorkerOptions & { notices: NoticeQueue }) {
  let worker: Worker<NoticeJob> | undefined;
  let recovery: Promise<unknown> | undefined;
  return {
    start(): void {
      if (worker) return;
      worker = createNoticeWorker(options);
      recovery = requeueStrandedNotices({ store: options.store, notices: options.notices, logger: options.logger }).catch((error: unknown) =>
        options.logger.error('handoff-notice-recovery-failed', { error }),
      );
    },
    async close(): Promise<void> {
      await recovery;
      await worker?.close();
    },
  };
}
