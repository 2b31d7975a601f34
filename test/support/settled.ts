/**
 * Conditions tests wait on instead of fixed sleeps: "nothing more will happen" is a queue with
 * no turn left to run (none active, waiting, delayed or retrying), or a hand-off ledger with no
 * notice left to send.
 */
import type { Services } from '../../src/composition-root.js';
import { eventually } from './harness.js';

/** Resolves once no turn job is active, waiting or due for a retry. */
export async function turnsSettled(services: Pick<Services, 'queue'>): Promise<void> {
  await eventually(async () => {
    const counts = await services.queue.getJobCounts('active', 'wait', 'delayed', 'prioritized', 'waiting-children');
    return Object.values(counts).every((count) => count === 0);
  });
}

/** Resolves once the turns are settled and every notice of every recent hand-off is sent or has failed for good. */
export async function handoffsSettled(services: Pick<Services, 'queue' | 'handoffs'>): Promise<void> {
  await turnsSettled(services);
  await eventually(async () => {
    const handoffs = await services.handoffs.list({ limit: 50 });
    return handoffs.every((handoff) => handoff.notices.every((notice) => notice.status !== 'pending' && notice.status !== 'sending'));
  });
}

/**
 * Resolves once every transcript record appended so far is in MongoDB: the outbox is empty
 * (the writer deletes an entry only after MongoDB acknowledged it). Replaces sleeping before a
 * MongoDB read that follows a reply.
 */
export async function transcriptsWritten(services: Pick<Services, 'outbox' | 'queue'>, timeoutMs = 30_000): Promise<void> {
  await turnsSettled(services);
  await eventually(async () => (await services.outbox.backlog()) === 0 || undefined, timeoutMs);
}
