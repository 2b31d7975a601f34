/**
 * Ends the actions nobody came back to, on time: a confirmation the customer never answered is
 * `expired` a minute after its time is up (an answer that arrived in time may still be waiting
 * for its turn until then; counted then, not when the customer next writes), and a run
 * whose attempt died (its lease over) is resolved with its own idempotency key once the
 * business system answers — the record ends `done` or `failed`, and the customer's next
 * message resumes the question with that outcome.
 *
 * Every worker sweeps; every step is the actions' own compare-and-set, so two sweepers (or a
 * sweeper and a turn) never do a step twice.
 */
import type { Logger } from '../logger.js';
import { ActionOutcomePendingError, ANSWER_GRACE_MS, leaseEnd, proposerContext, RUN_LEASE_MS, type ActionRunner } from './action-runner.js';
import type { ActionStore } from './action-store.js';

export interface ActionSweeperOptions {
  store: ActionStore;
  runner: ActionRunner;
  logger: Logger;
  /** How often it looks (default 10 s). */
  intervalMs?: number;
  /** How long after a confirmation's time is up an answer that arrived in time may still come (default `ANSWER_GRACE_MS`). */
  graceMs?: number;
  now?: () => number;
}

/** The most actions one sweep looks at. */
const SWEEP_LIMIT = 50;

export function createActionSweeper(options: ActionSweeperOptions) {
  const { store, runner } = options;
  const logger = options.logger.child({ component: 'action-sweeper' });
  const now = options.now ?? Date.now;
  let timer: NodeJS.Timeout | undefined;
  let sweeping: Promise<void> | undefined;

  /** One action: ended, expired, resolved, or due again later. */
  const visit = async (conversationKey: string, actionId: string) => {
    const record = await store.get(conversationKey, actionId);
    if (!record || ['done', 'failed', 'cancelled', 'expired'].includes(record.state)) return store.undue(conversationKey, actionId);
    if (record.state === 'proposed') {
      // An answer that arrived in time may still be on its way to its turn: expired once that is over too.
      const over = Date.parse(record.expiresAt) + (options.graceMs ?? ANSWER_GRACE_MS);
      if (now() <= over) return store.due(conversationKey, actionId, over);
      const reason = record.confirmer === 'teammate' ? 'no decision in time' : 'no answer in time';
      await runner.tryMove(record, ['proposed'], 'expired', { reason });
      return;
    }
    // Confirmed or running with nobody on it (its attempt died): run or resolved once, with its own key.
    const from = record.state === 'running' ? leaseEnd(record) : Date.parse(record.updatedAt) + RUN_LEASE_MS;
    if (now() < from) return store.due(conversationKey, actionId, from);
    try {
      const ended = await runner.run(record, proposerContext(record), 'report');
      if (ended) logger.warn('action-resolved-by-sweeper', { actionId, tool: record.tool, state: ended.state });
    } catch (error) {
      if (!(error instanceof ActionOutcomePendingError)) throw error;
      await store.due(conversationKey, actionId, now() + RUN_LEASE_MS);
    }
  };

  const sweep = async () => {
    for (const { conversationKey, actionId } of await store.dueBy(now(), SWEEP_LIMIT)) {
      await visit(conversationKey, actionId).catch((error: unknown) => logger.warn('action-sweep-failed', { actionId, error }));
    }
  };

  return {
    /** One pass (tests call it; `start` runs it on a timer). */
    sweep,
    start() {
      if (timer) return;
      timer = setInterval(() => {
        if (sweeping) return;
        sweeping = sweep()
          .catch((error: unknown) => logger.warn('action-sweep-failed', { error }))
          .finally(() => (sweeping = undefined));
      }, options.intervalMs ?? 10_000);
      timer.unref();
    },
    async close() {
      clearInterval(timer);
      timer = undefined;
      await sweeping;
    },
  };
}
