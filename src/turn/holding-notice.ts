/**
 * The holding message of a model outage: when a turn fails because no model answered
 * (every entry of a tier failed or was skipped — a retryable model failure) and the customer has
 * waited `holdingNoticeMs` since the batch's first message, they get one short message saying we
 * will answer here; the queue keeps retrying the message, and the real answer follows once a
 * model is back. It goes through the send ledger as a part of its own (HOLDING_PART) of the
 * batch's reply, stored once: every retry of the batch finds it there and sends nothing again.
 */
import { errorText, ModelCallError } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { ChannelDefinition, InboundMessage } from '../contracts/index.js';
import { HOLDING_PART, type MessageRecord, type TranscriptStore } from '../store/transcript-store.js';

export const HOLDING_NOTICE_TEXT = "We're having a technical problem — we'll answer here shortly.";

/** Sends ledger parts once (the inbound handler's sender). */
type PartSender = (
  channel: ChannelDefinition,
  message: InboundMessage,
  parts: readonly MessageRecord[],
  logger: Logger,
  assertHeld?: () => void,
) => Promise<unknown>;

export interface HoldingNoticeOptions {
  transcripts: TranscriptStore;
  metrics: Metrics;
  /** How long the customer waits on an outage before the holding message. */
  holdingNoticeMs: number;
  deliver: PartSender;
  now?: () => number;
}

/** Whether a failed turn is a model outage: no entry of a tier answered, and a retry may. */
const isModelOutage = (error: unknown) => error instanceof ModelCallError && error.retryable;

/**
 * Called with the error a turn failed with (before it is rethrown for the queue's retry): sends
 * the holding message when due. Never throws: the turn's own failure is what the queue must see.
 */
export function createHoldingNotice(options: HoldingNoticeOptions) {
  const now = options.now ?? Date.now;
  return async (
    turn: { channel: ChannelDefinition; conversationId: string; message: InboundMessage; earlier: readonly InboundMessage[] },
    error: unknown,
    logger: Logger,
    assertHeld: () => void,
  ): Promise<void> => {
    if (!isModelOutage(error)) return;
    const { channel, message } = turn;
    const waitedMs = now() - Math.min(message.receivedAt, ...turn.earlier.map((earlier) => earlier.receivedAt));
    if (waitedMs < options.holdingNoticeMs) return;
    try {
      const notice = await options.transcripts.saveApology({
        conversationId: turn.conversationId,
        channel: channel.id,
        replyTo: message.messageId,
        text: HOLDING_NOTICE_TEXT,
        part: HOLDING_PART,
      });
      if (notice.status !== 'pending' && notice.status !== 'sending' && notice.status !== 'uncertain') return;
      await options.deliver(channel, message, [notice], logger, assertHeld);
      options.metrics.increment('holding_notices_total', { channel: channel.id });
      logger.warn('holding-notice-sent', { waitedMs, error: errorText(error) });
    } catch (noticeError) {
      logger.error('holding-notice-failed', { error: noticeError });
    }
  };
}
