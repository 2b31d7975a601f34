/**
 * The send step: the reply's parts through the send ledger while the history marks the reply
 * stored (a retry resumes it); then the turn's finish (post-turn, metering) by whichever attempt
 * took it.
 */
import type { TurnResult } from '../contracts/index.js';
import { classifyFailure } from '../errors/index.js';
import type { MessageRecord, RecentMessage, TranscriptStore, TurnRecords } from '../store/transcript-store.js';
import type { LedgerSender } from './ledger-sender.js';
import type { RecordedBatch } from './record-batch.js';
import { withMessages } from './reply-plan.js';
import type { TurnFinisher } from './stored-turn.js';

export interface SendReplySteps {
  transcripts: TranscriptStore;
  deliver: LedgerSender;
  finish: TurnFinisher;
  /** Observes each answered turn (the CLI shows its decision); a promise it returns is part of the turn's finish. */
  onTurn?: (result: TurnResult) => void | Promise<void>;
}

/**
 * Sends the reply and saves the history with it; returns once the reply is out, with what
 * finishes the turn still running in `finishing`. A failure finishes the turn here when it must
 * (the reply went out, or a refusal for good ends it undelivered), then throws.
 */
export async function sendReply(
  { transcripts, deliver, finish, onTurn }: SendReplySteps,
  { channel, logger, conversationId, message }: RecordedBatch,
  history: readonly RecentMessage[],
  { parts, result }: { parts: readonly MessageRecord[]; result?: TurnResult },
  assertHeld: () => void,
  records: TurnRecords,
): Promise<{ finishing: Promise<void> }> {
  logger.debug('reply-stored', { parts: parts.map((part) => part.status) });
  const replies = parts.map((part): RecentMessage => ({ id: part._id, direction: 'outbound', text: part.text }));
  let taken = false;
  try {
    // The history (which marks the reply stored, for a retry to resume) and the sends are
    // independent writes: the first part leaves without waiting a round trip for the history.
    // Both settle before the turn ends either way: a send still in flight when the turn fails
    // would race its own retry.
    const [sent, saved] = await Promise.allSettled([
      deliver(channel, message, parts, logger, assertHeld, records),
      transcripts.saveRecent(conversationId, withMessages(history, replies), message.receivedAt),
    ]);
    if (sent.status === 'rejected') throw sent.reason;
    taken = sent.value;
    if (saved.status === 'rejected') throw saved.reason;
  } catch (error) {
    // The reply went out and this attempt took its turn: finished here, whatever failed after.
    // Otherwise a refusal for good ends the turn undelivered (the worker gives up on the
    // message); an outage is retried, and the attempt that delivers the reply finishes the turn.
    if (taken) await finish(channel, parts, true, logger, true, result);
    else if (classifyFailure(error) === 'deterministic') await finish(channel, parts, false, logger, false, result);
    throw error;
  }
  const finishing = finish(channel, parts, true, logger, taken, result);
  return { finishing: result ? finishing.then(() => onTurn?.(result)) : finishing };
}
