/**
 * Giving up on a batch, never silently: the decision is stored in the head's turn state first
 * (`givenUp`), then the give-up handler tells the customer and the operator under the lock's
 * fence. A holder that lost the lock on the way leaves the decision for the next holder, which
 * finishes it (`finishGiveUp`) instead of answering the batch.
 */
import { apologisedBefore } from './conversation-outage.js';
import type { InboxBatch } from './conversation-inbox.js';
import { batchOf, type TurnContext } from './turn-context.js';
import type { GiveUpFailure, GiveUpReason } from './turn-worker-types.js';

const GIVE_UP_REASONS = new Set<string>(['budget', 'poison', 'deterministic', 'unknown']);
/** A stored decision read back as a reason (anything unknown is `unknown`). */
const giveUpReason = (stored: string): GiveUpReason => (GIVE_UP_REASONS.has(stored) ? (stored as GiveUpReason) : 'unknown');

/** Gives up on a batch under the lock: the decision is stored first, so a holder after a lost lock finishes it instead of taking another turn. */
export async function giveUpHeld(
  context: TurnContext,
  conversationKey: string,
  batch: InboxBatch,
  failure: GiveUpFailure,
  assertHeld: () => void,
): Promise<void> {
  await context.options.inbox.markGivenUp(conversationKey, batch.entries[0].message.messageId, failure.reason);
  await context.options.giveUp(batchOf(batch), failure, assertHeld);
}

/**
 * Finishes giving up on a batch a holder that lost the lock decided on before acknowledging it
 * (the apology goes through the send ledger, so it reaches the customer once); returns the batch to acknowledge.
 */
export async function finishGiveUp(
  context: TurnContext,
  conversationKey: string,
  read: InboxBatch,
  decided: string,
  assertHeld: () => void,
): Promise<InboxBatch> {
  const batch = read.frozen ? read : { ...read, entries: [read.entries[0]] as const };
  const reason = giveUpReason(decided);
  const apologised = reason === 'budget' && apologisedBefore(await context.outage.read(conversationKey), batch.entries[0].message.messageId);
  const attempts = batch.retry?.attempts ?? 0;
  await context.options.giveUp(batchOf(batch), { reason, error: new Error('given up on before'), attempts, ...(apologised ? { apologised } : {}) }, assertHeld);
  return batch;
}
