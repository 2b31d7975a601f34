/**
 * Answers one inbound batch (a message, or a burst of them answered together), whatever its
 * channel: record each message, run the orchestrator once (unless
 * an earlier attempt already stored the reply, keyed to the batch's last message), then send
 * each reply part exactly once through the send ledger. A retry after a crash resumes from what was stored, so the customer
 * never gets a second, different answer; a part whose send outcome was lost (found `sending`)
 * is looked up at the provider and sent only if it is not there (or resent where the receiver
 * dedupes). When the worker gives up on a message, `createGiveUpHandler` makes it visible: the
 * customer gets one apology, the transcript records it failed, a metric and a log say so.
 *
 * The steps, each in its own file: open the conversation and let the takeover hook decide
 * (`record-batch.ts`, which also records the batch), decide how it is answered — resumed, reset
 * or run (`reply-plan.ts`) — run the orchestrator (`run-orchestrator.ts`), send through the
 * ledger (`send-reply.ts`, `ledger-sender.ts`), finish the turn (`stored-turn.ts`).
 */
import type { MediaTurn } from '../media/inbound-media.js';
import type { HoldingNotice, InboundBatch, InboundHandler, TurnGate } from '../queue/turn-worker.js';
import type { TurnRecords } from '../store/transcript-store.js';
import { giveUpWords } from '../words/give-up-words.js';
import { createHoldingNotice, type HoldingNoticeOptions } from './holding-notice.js';
import type { InboundHandlerOptions } from './inbound-options.js';
import { createLedgerSender } from './ledger-sender.js';
import { openBatch, recordBatch } from './record-batch.js';
import { planReply, storeReply } from './reply-plan.js';
import { sendReply } from './send-reply.js';
import { createTurnFinisher } from './stored-turn.js';

export { createGiveUpHandler } from './give-up.js';

/** The apology for a message given up on, in English (a web visitor's comes in their language). */
export const APOLOGY_TEXT = giveUpWords('en').apology;

export function createInboundHandler(options: InboundHandlerOptions): InboundHandler {
  const { transcripts, metrics } = options;
  const steps = {
    transcripts,
    deliver: createLedgerSender(transcripts, metrics),
    finish: createTurnFinisher(transcripts, options.orchestrator),
    onTurn: options.onTurn,
  };

  /**
   * Answers a batch; its transcript records go to the outbox as one entry when it ends — also
   * when it fails (best effort: its retry, or giving up, records them again). Returns once the
   * reply is out, with what finishes the turn (post-turn, metering) still running in `finishing`.
   */
  const answer = async (
    turn: InboundBatch,
    signal: AbortSignal,
    assertHeld: () => void,
    records: TurnRecords,
    media: { turn?: MediaTurn },
    gate: TurnGate | undefined,
  ): Promise<{ finishing: Promise<void> } | undefined> => {
    // Who is talking and the orchestrator's state, read while the conversation is opened (a teammate's entry is no turn).
    const channel = options.channels.get(turn.message.channel);
    const reads = channel && !turn.message.teammate ? options.orchestrator.startReads(channel, turn.message.conversationKey, turn.message) : undefined;
    const opened = await openBatch(options, turn, signal, records);
    if (!opened) return;
    const recorded = await recordBatch(options, turn, opened, signal, records, media);
    const plan = await planReply(options, recorded, reads);
    const reply = await storeReply(options, recorded, plan, signal, records, gate);
    return sendReply(steps, recorded, plan.history, reply, assertHeld, records);
  };

  return async (turn, signal, assertHeld, gate) => {
    const records = transcripts.turnRecords();
    // The turn's media bytes go back to the worker once the reply is out or the turn failed.
    const media: { turn?: MediaTurn } = {};
    let answered: { finishing: Promise<void> } | undefined;
    try {
      answered = await answer(turn, signal, assertHeld, records, media, gate);
    } catch (error) {
      media.turn?.end();
      await records
        .flush()
        .catch((flushError: unknown) => options.logger.warn('turn-records-unflushed', { conversationKey: turn.message.conversationKey, error: flushError }));
      throw error;
    }
    media.turn?.end();
    // Before the batch is acknowledged: a flush that fails fails the turn, and its retry records
    // it all again. The turn's finish (its own writes) runs meanwhile; both settle before the
    // turn ends either way, so nothing of it is still in flight when a retry starts.
    const [finished, flushed] = await Promise.allSettled([answered?.finishing, records.flush()]);
    if (finished.status === 'rejected') throw finished.reason;
    if (flushed.status === 'rejected') throw flushed.reason;
  };
}

/**
 * A model outage's holding message (see holding-notice.ts), sent by the turn worker through the
 * send ledger while a failed batch waits for its next attempt.
 */
export function createHoldingNoticeHandler(options: Omit<HoldingNoticeOptions, 'deliver'>): HoldingNotice {
  return createHoldingNotice({ ...options, deliver: createLedgerSender(options.transcripts, options.metrics) });
}
