/**
 * A failed turn: its attempt counted in the head's turn state, then either its next attempt
 * scheduled (a delayed re-drive job, the one job the failed head waits for) or the batch given
 * up on (`turn-give-up.ts`). While a failed head waits, its customer may hear the holding
 * message (`HoldingNotice`): sent now if due, else by a delayed holding job at its time, only
 * while the batch still waits on that same failure.
 */
import { classifyFailure } from '../errors/index.js';
import { apologisedBefore, type ConversationWait } from './conversation-outage.js';
import type { InboxBatch } from './conversation-inbox.js';
import { batchOf, type TurnContext } from './turn-context.js';
import { giveUpHeld } from './turn-give-up.js';
import type { DrainOutcome, GiveUpReason } from './turn-worker-types.js';

/** Attempts at a message failing for an unknown reason (likely a bug) before it is given up on. */
export const MAX_SUSPECT_ATTEMPTS = 3;
/** The name of the delayed job that tries a failed head again when it is due. */
export const REDRIVE_JOB = 'redrive';
/** The name of the delayed job that sends a waiting head's holding message when it is due. */
export const HOLDING_JOB = 'holding';

const redriveJobId = (conversationKey: string, messageId: string, attempt: number) => `redrive|${conversationKey}|${messageId}|${attempt}`.replace(/:/g, '_');
const holdingJobId = (conversationKey: string, messageId: string, attempt: number) => `holding|${conversationKey}|${messageId}|${attempt}`.replace(/:/g, '_');

/** The re-drive job of the head's failed attempt `attempt`, due at `at` (idempotent: adding an existing job id is a no-op). */
async function ensureRedrive(context: TurnContext, conversationKey: string, messageId: string, attempt: number, at: number): Promise<DrainOutcome> {
  const redriveId = redriveJobId(conversationKey, messageId, attempt);
  await context.options.queue.add(REDRIVE_JOB, { conversationKey, messageId }, { jobId: redriveId, delay: Math.max(0, at - Date.now()) });
  return { kind: 'waiting', at, redriveId };
}

/** Handles a failed batch: schedules its next attempt (`waiting`), or gives up on it (the reason). */
export async function onFailure(
  context: TurnContext,
  conversationKey: string,
  batch: InboxBatch,
  error: unknown,
  assertHeld: () => void,
): Promise<DrainOutcome | GiveUpReason> {
  const { inbox, metrics, logger, retryBudgetMs } = context.options;
  const { message } = batch.entries[0];
  const kind = classifyFailure(error);
  const now = Date.now();
  const state = await inbox.recordFailure(conversationKey, message.messageId, { ...context.policy, suspect: kind === 'unknown', now });
  // The budget counts from the conversation's oldest waiting message, not this batch's first failure.
  const wait = await context.outage.failed(conversationKey, Math.min(...batch.entries.map((entry) => entry.message.receivedAt)));
  const budgetSpent = now - wait.since >= retryBudgetMs;
  const reason: GiveUpReason | undefined =
    kind === 'deterministic'
      ? 'deterministic'
      : kind === 'unknown' && state.suspectAttempts >= MAX_SUSPECT_ATTEMPTS
        ? 'unknown'
        : budgetSpent
          ? 'budget'
          : undefined;
  if (reason) {
    // One apology per wait: the first batch given up on for its budget apologises for the messages behind it too.
    if (reason === 'budget') await context.outage.apologised(conversationKey, message.messageId, now);
    const apologised = reason === 'budget' && apologisedBefore(wait, message.messageId);
    await giveUpHeld(context, conversationKey, batch, { reason, error, attempts: state.attempts, ...(apologised ? { apologised } : {}) }, assertHeld);
    return reason;
  }
  const waiting = await ensureRedrive(context, conversationKey, message.messageId, state.attempts, state.nextAttemptAt);
  metrics.increment('inbound_retries_total', { channel: message.channel, kind });
  // An outage's retries: the first of a message at info, each further one at debug (the outage
  // has lines of its own); a failure that may be a bug stays a warning.
  const level = kind !== 'infrastructure' ? 'warn' : state.attempts <= 1 ? 'info' : 'debug';
  logger[level]('inbound-retrying', {
    conversationKey,
    messageId: message.messageId,
    messages: batch.entries.length,
    kind,
    attempts: state.attempts,
    retryInMs: state.nextAttemptAt - now,
    budgetLeftMs: retryBudgetMs - (now - wait.since),
    error,
  });
  await holdWhileWaiting(context, conversationKey, batch, error, { ...state, wait }, assertHeld);
  return waiting;
}

/**
 * A failed head found before its next attempt is due: left to its re-drive job (ensured). A
 * holding job (`holding`: the head and failed attempt whose holding message is due) still waiting
 * on that failure (no attempt since: the same count, and none can run while this holds the lock)
 * sends its message now.
 */
export async function waitForRetry(
  context: TurnContext,
  conversationKey: string,
  batch: InboxBatch & { retry: NonNullable<InboxBatch['retry']> },
  holding: { messageId: string; attempt: number } | undefined,
  assertHeld: () => void,
): Promise<DrainOutcome> {
  const { messageId } = batch.entries[0].message;
  if (holding?.messageId === messageId && holding.attempt === batch.retry.attempts) await sendHolding(context, conversationKey, batch, assertHeld);
  return ensureRedrive(context, conversationKey, messageId, batch.retry.attempts, batch.retry.nextAttemptAt);
}

/**
 * The holding message of a batch whose next attempt was just scheduled (see `HoldingNotice`):
 * due before that attempt starts, it is sent now if due already, else by a delayed job at its
 * time (which sends it only if the batch still waits on this failure). Due after it: the next
 * attempt goes first, and decides again if it fails. A job that can't be added is logged: the
 * next failing attempt past the due time sends it.
 */
async function holdWhileWaiting(
  context: TurnContext,
  conversationKey: string,
  batch: InboxBatch,
  error: unknown,
  state: { attempts: number; nextAttemptAt: number; wait: ConversationWait },
  assertHeld: () => void,
): Promise<void> {
  const { holding, queue, logger } = context.options;
  // Once per wait: not again for the batches behind the one that had it.
  const dueAt = state.wait.held ? undefined : holding?.dueAt(batchOf(batch), error, state.wait.since);
  if (!holding || dueAt === undefined || state.nextAttemptAt < dueAt) return;
  const delay = dueAt - Date.now();
  if (delay <= 0) return sendHolding(context, conversationKey, batch, assertHeld);
  const { messageId } = batch.entries[0].message;
  try {
    await queue.add(
      HOLDING_JOB,
      { conversationKey, messageId, attempt: state.attempts },
      { jobId: holdingJobId(conversationKey, messageId, state.attempts), delay },
    );
  } catch (addError) {
    logger.warn('holding-notice-unscheduled', { conversationKey, messageId, error: addError });
  }
}

/** Sends a waiting batch's holding message unless its conversation's wait had one, and notes it sent. */
async function sendHolding(context: TurnContext, conversationKey: string, batch: InboxBatch, assertHeld: () => void): Promise<void> {
  const { holding } = context.options;
  if (!holding || (await context.outage.read(conversationKey))?.held) return;
  if (await holding.send(batchOf(batch), assertHeld)) await context.outage.held(conversationKey);
}
