/**
 * Notices held for a team's opening (`out-of-hours.ts`) end with their hand-off: once it is
 * taken, handed back or closed, its WhatsApp notices still waiting for the opening are withdrawn
 * in the notice ledger (pending → withdrawn, never sent) and their delayed jobs removed. A job
 * that fires anyway (its removal failed, or the process died in between) finds the hand-off no
 * longer open and withdraws its notice itself (`notice-queue.ts`), so the team never gets "New
 * hand-off" for a conversation already over.
 */
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { noticeId, type HandoffRecord, type HandoffStore } from './handoff-records.js';
import { noticeJobId, type NoticeQueue } from './notice-queue.js';
import { heldForOpening } from './out-of-hours.js';
import type { Teams } from './teams.js';

interface HeldNoticesOptions {
  teams: Teams;
  notices: Pick<NoticeQueue, 'queue'>;
  logger: Logger;
  metrics: Metrics;
}

/** Withdraws the hand-off's notices that wait for its team to open; how many it withdrew. */
async function withdrawHeldNotices(store: Pick<HandoffStore, 'withdrawNotice'>, handoff: HandoffRecord, options: HeldNoticesOptions): Promise<number> {
  const team = options.teams[handoff.team];
  if (!team) return 0;
  let withdrawn = 0;
  for (const destination of handoff.destinations.filter((candidate) => heldForOpening(team, candidate, handoff.createdAt))) {
    if (!(await store.withdrawNotice(noticeId(handoff._id, destination.id), `hand-off ${handoff.status} before the team opened`))) continue;
    withdrawn += 1;
    options.metrics.increment('handoff_notices_total', { kind: destination.kind, outcome: 'withdrawn' });
    options.logger.info('handoff-notice-withdrawn', { handoffId: handoff._id, destinationId: destination.id, status: handoff.status });
    // The job finds nothing to send if it fires anyway: removing it is housekeeping.
    await options.notices.queue.remove(noticeJobId(handoff._id, destination.id)).catch((error: unknown) => {
      options.logger.warn('handoff-notice-job-not-removed', { handoffId: handoff._id, destinationId: destination.id, error });
    });
  }
  return withdrawn;
}

/** The store, its take, hand-back and close followed by the withdrawal of the hand-off's held notices. */
export function settlingHeldNotices(store: HandoffStore, options: HeldNoticesOptions): HandoffStore {
  // The transition stands whatever happens here: a notice left pending is withdrawn by its job.
  const settle = async (handoffId: string) => {
    try {
      const handoff = await store.get(handoffId);
      if (handoff && handoff.status !== 'open') await withdrawHeldNotices(store, handoff, options);
    } catch (error) {
      options.logger.warn('handoff-held-notices-unsettled', { handoffId, error });
    }
  };
  return {
    ...store,
    async take(handoffId, actor) {
      const result = await store.take(handoffId, actor);
      if (result.taken) await settle(handoffId);
      return result;
    },
    async handBack(handoffId, by, reason, holderId) {
      const ended = await store.handBack(handoffId, by, reason, holderId);
      if (ended) await settle(ended._id);
      return ended;
    },
    async close(handoffId, by, reason) {
      const before = await store.close(handoffId, by, reason);
      if (before) await settle(before._id);
      return before;
    },
  };
}
