/**
 * Draining a conversation: claimed (`turn-claim.ts`), its inbox is answered from the head, a
 * batch per turn, until it is empty. Each batch read is first settled by what its turn state
 * says: a death in its last turn counted (`turn-quarantine.ts`), a give-up decided before
 * finished (`turn-give-up.ts`), a failed head not yet due left to its re-drive job
 * (`turn-retry.ts`); otherwise its turn runs (`turn-batch.ts`). A settled batch is acknowledged
 * in the step that reads the next one, and the last acknowledgement frees the lock in the same
 * step, so nothing can arrive between "empty" and "free".
 */
import { CorruptInboxEntryError, type InboxBatch } from './conversation-inbox.js';
import { lockRenewIntervalMs } from './conversation-lock.js';
import { createTurnAdmission } from './turn-admission.js';
import { runBatch, type BatchStep } from './turn-batch.js';
import { claimConversation, type DrainState } from './turn-claim.js';
import type { TurnContext } from './turn-context.js';
import { finishGiveUp } from './turn-give-up.js';
import { accountForDeath } from './turn-quarantine.js';
import { waitForRetry } from './turn-retry.js';
import type { DrainOutcome } from './turn-worker-types.js';

/**
 * Answers the conversation's inbox from the head, a batch per turn, until it is empty, under its
 * lock (for job `jobId`). `holding` (a holding job's): the head and failed attempt whose holding
 * message is due, sent if the head still waits on that attempt's failure.
 */
export async function drain(
  context: TurnContext,
  conversationKey: string,
  jobId?: string,
  holding?: { messageId: string; attempt: number },
): Promise<DrainOutcome> {
  const claim = await claimConversation(context, conversationKey);
  if (!claim) return { kind: 'busy' };
  const { logger, lockTtlMs } = context.options;
  const state: DrainState = {
    ...claim,
    ...(jobId !== undefined ? { jobId } : {}),
    ...(holding ? { holding } : {}),
    prefetched: claim.first,
    admission: createTurnAdmission(context.suspects, context.solo, lockRenewIntervalMs(lockTtlMs), logger, conversationKey),
  };
  try {
    for (;;) {
      if (context.options.shutdown.aborted) return { kind: 'stopped' };
      if (!state.lock.held) throw new Error(`lost the lock of ${conversationKey} mid-drain`);
      const batch = await readHead(context, state);
      if (batch === 'discarded') continue;
      if (!batch) return { kind: 'drained' };
      const step = await settle(context, state, batch);
      if (step.kind === 'restarted') continue;
      if (step.kind !== 'settled') return step;
      if (await acknowledge(context, state, step.batch, step.keepsWait)) return { kind: 'drained', released: true };
    }
  } finally {
    await endDrain(context, state);
  }
}

/** The head's batch (the one read with the last step, or read now); a corrupt head is discarded, so one entry never blocks a conversation. */
async function readHead(context: TurnContext, state: DrainState): Promise<InboxBatch | undefined | 'discarded'> {
  const { inbox, logger, metrics } = context.options;
  const read = state.prefetched;
  state.prefetched = undefined;
  if (!read) state.heard.notices = [];
  state.heard.listener = undefined;
  try {
    return read ? read() : await inbox.batch(state.conversationKey, context.maxBatch);
  } catch (error) {
    if (!(error instanceof CorruptInboxEntryError)) throw error;
    logger.error('inbox-entry-discarded', { conversationKey: state.conversationKey, error });
    metrics.increment('inbox_corrupt_total');
    await inbox.discardHead(state.conversationKey);
    return 'discarded';
  }
}

/** What the head's turn state says of the batch: quarantined or given up on before (to acknowledge), waiting for its retry, or its turn to run. */
async function settle(context: TurnContext, state: DrainState, read: InboxBatch): Promise<BatchStep> {
  const { conversationKey, assertHeld } = state;
  const { batch, quarantined } = await accountForDeath(context, conversationKey, read, assertHeld);
  // Acknowledged as any batch given up on.
  if (quarantined) return { kind: 'settled', batch, keepsWait: false };
  const decided = batch.givenUp;
  // A batch given up on for its budget keeps the conversation's wait for those behind it; anything else ends it.
  if (decided !== undefined)
    return { kind: 'settled', batch: await finishGiveUp(context, conversationKey, batch, decided, assertHeld), keepsWait: decided === 'budget' };
  if (batch.retry && batch.retry.nextAttemptAt > Date.now())
    return waitForRetry(context, conversationKey, { ...batch, retry: batch.retry }, state.holding, assertHeld);
  return runBatch(context, state, batch);
}

/**
 * Removes the settled batch and reads the next in the same step (what the notices say from here
 * on is kept for that batch's turn, as before a read of its own): true when that emptied the
 * inbox and freed the lock (nothing can have arrived since).
 */
async function acknowledge(context: TurnContext, state: DrainState, done: InboxBatch, keepsWait: boolean): Promise<boolean> {
  const { conversationKey, lock, heard, admission } = state;
  if (!lock.held) throw new Error(`lost the lock of ${conversationKey} before acknowledging`);
  heard.listener = undefined;
  heard.notices = [];
  const acknowledged = await lock.releaseWith(async (token) => {
    const result = await context.options.inbox.acknowledgeAndBatch(conversationKey, done, token, context.maxBatch, keepsWait);
    return { released: result.released, value: result };
  });
  // The acknowledgement cleared the batch's turn state, its running mark with it.
  state.running = undefined;
  admission.ended();
  // A batch a worker died in is answered: the next suspect may run, and this process takes other turns again.
  await admission.release();
  context.options.logger.debug('inbound-acknowledged', { conversationKey, messageIds: done.entries.map((entry) => entry.message.messageId) });
  if (acknowledged.released) return true;
  state.prefetched = acknowledged.batch;
  return false;
}

/** On the way out: stops listening, clears the mark of a turn cut short (no worker's death), lets the admission and the lock go. */
async function endDrain(context: TurnContext, state: DrainState): Promise<void> {
  const { conversationKey, admission } = state;
  state.unwatch();
  if (state.running !== undefined)
    await context.options.inbox
      .turnStopped(conversationKey, state.running)
      .catch((error: unknown) => context.options.logger.warn('turn-mark-uncleared', { conversationKey, error }));
  admission.ended();
  await admission.release();
  await state.lock.release();
}
