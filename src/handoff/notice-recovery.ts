/**
 * Heals a hand-off stranded between "opened" and "notices queued": the hand-off and its
 * pending notices are written to MongoDB before the jobs go to BullMQ, so a process that dies
 * in between leaves a team never told. When a worker starts, every recent open hand-off with
 * a notice still pending is queued again; a job id is the notice's own, so a notice already
 * queued (waiting, retrying or done) is not queued twice, and the ledger still sends it once.
 */
import type { Logger } from '../logger.js';
import type { HandoffStore } from './handoff-store.js';
import type { NoticeQueue } from './notice-queue.js';

/** How many recent open hand-offs a start-up looks at: stranded ones are the newest. */
const RECOVERY_WINDOW = 200;

export async function requeueStrandedNotices(options: { store: HandoffStore; notices: Pick<NoticeQueue, 'enqueue'>; logger: Logger }): Promise<number> {
  const open = await options.store.list({ status: 'open', limit: RECOVERY_WINDOW });
  let queued = 0;
  for (const handoff of open) {
    const pending = new Set(handoff.notices.filter((notice) => notice.status === 'pending').map((notice) => notice.destination.id));
    const destinations = handoff.destinations.filter((destination) => pending.has(destination.id));
    if (destinations.length === 0) continue;
    await options.notices.enqueue({ _id: handoff._id, destinations });
    queued += destinations.length;
  }
  if (queued > 0) options.logger.info('handoff-notices-requeued', { notices: queued });
  return queued;
}
