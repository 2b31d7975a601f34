/**
 * The process's side of hand-off notices: `start()` runs the notice worker and queues again the
 * notices a crash left pending (`notice-recovery.ts`), once per process whichever caller comes
 * first; `close()` waits for the recovery and stops the worker.
 */
import type { Worker } from 'bullmq';
import { createNoticeWorker, type NoticeJob, type NoticeQueue, type NoticeWorkerOptions } from './notice-queue.js';
import { requeueStrandedNotices } from './notice-recovery.js';

export function createNoticeDelivery(
  options: NoticeWorkerOptions & {
    notices: NoticeQueue;
    /** Runs the recovery once MongoDB answers, retried until it succeeds (a worker may start during an outage); at once without it. */
    whenStoreReady?: (name: string, task: () => Promise<void>) => void;
  },
) {
  let worker: Worker<NoticeJob> | undefined;
  let recovery: Promise<unknown> | undefined;
  return {
    start(): void {
      if (worker) return;
      worker = createNoticeWorker(options);
      const recover = () => requeueStrandedNotices({ store: options.store, notices: options.notices, logger: options.logger });
      if (options.whenStoreReady) {
        options.whenStoreReady('hand-off notice recovery', async () => void (await recover()));
        return;
      }
      recovery = recover().catch((error: unknown) => options.logger.error('handoff-notice-recovery-failed', { error }));
    },
    async close(): Promise<void> {
      await recovery;
      await worker?.close();
    },
  };
}
