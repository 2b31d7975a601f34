/**
 * A suspect turn in a child process (`suspect-child.ts`), for a worker whose entry runs them so:
 * the worker holds the conversation's lock and the turn's running mark (its own, not marked alone:
 * this process dying meanwhile is no evidence against the batch) while the child answers the batch.
 * The child's end is the turn's: answered, failed (the child's classification, rebuilt here for the
 * retry policy and the holding message), or died running it, which quarantines the batch at once
 * (`turn-quarantine.ts`). A child that never took the batch is an outage (retried: alone in the
 * worker for a while), one the worker stopped a turn cut short.
 */
import { ClassifiedFailure, ModelCallError } from '../errors/index.js';
import type { ChildOutcome } from './suspect-child.js';
import type { DrainState } from './turn-claim.js';
import type { TurnContext } from './turn-context.js';
import type { InboundBatch } from './turn-worker-types.js';

/** Whether the head's batch (`crashes`: workers died in it) runs in a child in this process. */
export const runsIsolated = (context: TurnContext, crashes: number): boolean => crashes > 0 && context.children.enabled;

/** The error a child's failure stands for: classified as the child found it (a model outage as one, for the holding message). */
function failureOf(outcome: Extract<ChildOutcome, { kind: 'failed' }>): Error {
  const error = outcome.modelOutage ? new ModelCallError(outcome.message, true) : new ClassifiedFailure(outcome.message, outcome.failure);
  error.name = outcome.name;
  return error;
}

/**
 * Runs the suspect's turn `turn` in a child: `answered`, `died` (the child died running it), or
 * `stopped` (the process is stopping). Throws a failed turn's error, or the lock's loss.
 */
export async function runIsolated(context: TurnContext, drain: DrainState, turn: InboundBatch): Promise<'answered' | 'died' | 'stopped'> {
  const { logger, shutdown } = context.options;
  const { conversationKey, abort, lock } = drain;
  const outcome = await context.children.run(turn, () => lock.heldUntil, abort.signal, shutdown);
  switch (outcome.kind) {
    case 'answered':
      return 'answered';
    case 'failed':
      throw failureOf(outcome);
    case 'died':
      logger.error('suspect-child-died', { conversationKey, messageId: turn.message.messageId, code: outcome.code, signal: outcome.signal });
      return 'died';
    case 'unstarted':
      // Retried, alone in this process for a while (`suspect-child.ts`).
      logger.error('suspect-child-unstarted', { conversationKey, code: outcome.code, signal: outcome.signal });
      throw new ClassifiedFailure('the suspect turn child did not start', 'infrastructure');
    case 'stopped':
      if (abort.signal.aborted) throw abort.signal.reason;
      return 'stopped';
  }
}
