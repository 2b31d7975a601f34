/**
 * One turn on the head's batch, under the conversation's lock: admitted (a batch a worker died
 * in runs in a child process of its own where the worker's entry allows it, `turn-isolated.ts`;
 * else only as the fleet's suspect turn, alone in its process), frozen and marked running in
 * one step, then handed to the handler (or the child). It ends answered (acknowledged by the drain), started
 * over (`turn-restart.ts`), cut short by a lost lock (the next holder's to retry: nothing
 * counted), or failed (`turn-retry.ts`: its next attempt scheduled, or given up on).
 */
import type { InboxBatch } from './conversation-inbox.js';
import type { DrainState } from './turn-claim.js';
import { batchOf, failedIn, type TurnContext } from './turn-context.js';
import { runIsolated, runsIsolated } from './turn-isolated.js';
import { quarantineChildDeath } from './turn-quarantine.js';
import { onFailure } from './turn-retry.js';
import { openRestartGate, restartTurn, whenTurnStarts } from './turn-restart.js';
import type { DrainOutcome } from './turn-worker-types.js';

/**
 * What one turn came to: `settled` (answered or given up on: to acknowledge `batch`; `keepsWait`: a budget give-up, whose
 * conversation's wait goes on for the batches behind it), `restarted` (read the head again), or
 * the drain's outcome (it ends the drain).
 */
export type BatchStep = DrainOutcome | { kind: 'settled'; batch: InboxBatch; keepsWait: boolean } | { kind: 'restarted' };

/** Runs the turn of the head's batch `read` (not given up on, not waiting for a retry). */
export async function runBatch(context: TurnContext, drain: DrainState, read: InboxBatch): Promise<BatchStep> {
  const { inbox, handle, logger, metrics } = context.options;
  const { conversationKey, abort, assertHeld } = drain;
  const head = read.entries[0].message;
  const start = whenTurnStarts(context, conversationKey, read);
  if (start.quietAt !== undefined) return { kind: 'quiet', at: start.quietAt };
  let batch = start.batch;
  const isolated = runsIsolated(context, batch.crashes);
  if (isolated && !context.children.available()) {
    logger.info('turn-suspect-waiting', { conversationKey, messageId: head.messageId });
    return { kind: 'quiet', at: Date.now() + context.busyDelayMs };
  }
  // A batch a worker died in runs in a child, or else only as the one suspect turn, alone in this process; until then it waits, unmarked.
  const mark = await drain.admission.admit(batch.crashes > 0 && !isolated, context.heartbeat.runningMark(drain.token), abort.signal);
  if (mark === undefined) {
    logger.info(batch.crashes > 0 ? 'turn-suspect-waiting' : 'turn-waiting-for-suspect', { conversationKey, messageId: head.messageId });
    return { kind: 'quiet', at: Date.now() + context.busyDelayMs };
  }
  // Frozen (every later attempt answers the same messages) and marked running, in one step.
  if (batch.frozen) await inbox.markRunning(conversationKey, head.messageId, mark);
  else batch = await inbox.freeze(conversationKey, batch, mark);
  drain.running = mark;
  const gate = start.coalescing && !isolated ? openRestartGate(context, drain, batch) : undefined;
  const turn = batchOf(batch);
  if (turn.earlier.length > 0) metrics.increment('inbound_coalesced_total', { channel: head.channel }, turn.earlier.length);
  try {
    if (!isolated) await handle(turn, abort.signal, assertHeld, gate);
    else {
      const end = await runIsolated(context, drain, turn);
      if (end === 'stopped') return { kind: 'stopped' };
      if (end === 'died') {
        const quarantined = await quarantineChildDeath(context, conversationKey, batch, mark, assertHeld);
        // The death's record cleared the running mark.
        drain.running = undefined;
        drain.admission.ended();
        return { kind: 'settled', batch: quarantined, keepsWait: false };
      }
    }
  } catch (error) {
    // A turn cut short by a lost lock is the next holder's to retry: nothing is counted.
    if (abort.signal.aborted) throw failedIn(context, drain.jobId, head.messageId, error);
    if (gate?.restart.aborted) {
      await restartTurn(context, drain, batch);
      return { kind: 'restarted' };
    }
    const outcome = await onFailure(context, conversationKey, batch, error, assertHeld).catch((failure: unknown) => {
      throw failedIn(context, drain.jobId, head.messageId, failure);
    });
    // The failure's record cleared the running mark.
    drain.running = undefined;
    drain.admission.ended();
    if (typeof outcome !== 'string') return outcome;
    return { kind: 'settled', batch, keepsWait: outcome === 'budget' };
  }
  return { kind: 'settled', batch, keepsWait: false };
}
