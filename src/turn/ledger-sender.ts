/** Reply parts through the send ledger: claim, send, record — and resolve lost outcomes. */
import type { ChannelDefinition, InboundMessage, SendOptions } from '../contracts/index.js';
import { ChannelSendError, isRetryable } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { sendPartOnce } from '../store/part-ledger.js';
import type { MessageRecord, TranscriptStore, TurnRecords } from '../store/transcript-store.js';

/** Sends a reply's parts once each, in order (see `createLedgerSender`). */
export type LedgerSender = ReturnType<typeof createLedgerSender>;

export function createLedgerSender(transcripts: TranscriptStore, metrics: Metrics) {
  const sendPart = (
    channel: ChannelDefinition,
    message: InboundMessage,
    part: MessageRecord,
    logger: Logger,
    assertHeld: (() => void) | undefined,
    records: TurnRecords | undefined,
    takeTurn: boolean,
    options?: SendOptions,
  ) => {
    return sendPartOnce(transcripts, {
      channel,
      inbound: message,
      part,
      records,
      takeTurn,
      send: async () => {
        // The fence: a worker that may have lost the conversation sends nothing (the part stays claimed and is looked up).
        assertHeld?.();
        const started = performance.now();
        try {
          const sent = await channel.transport.send(message, part.text, part.part ?? 0, ...(options ? [options] : []));
          metrics.observe('send_duration_seconds', { channel: channel.id, outcome: 'sent' }, (performance.now() - started) / 1000);
          return sent;
        } catch (error) {
          if (error instanceof ChannelSendError) {
            metrics.observe(
              'send_duration_seconds',
              { channel: channel.id, outcome: error.retryable ? 'retrying' : 'failed' },
              (performance.now() - started) / 1000,
            );
          }
          if (isRetryable(error)) logger.warn('reply-send-retrying', { part: part.part, error });
          else if (error instanceof ChannelSendError) {
            metrics.increment('reply_send_failed_total', { channel: channel.id });
            logger.error('reply-send-failed', { part: part.part, error });
          }
          throw error;
        }
      },
      onResolved: (outcome, found) => {
        metrics.increment('reply_parts_resolved_total', { channel: channel.id, outcome });
        logger.warn('reply-part-resolved', { part: part.part, outcome, ...(found ? { channelMessageId: found.channelMessageId } : {}) });
      },
    });
  };

  /**
   * Sends each part once, in order, the last with the reply's question's answers to tap (kept
   * with the parts, so a resumed reply shows them too); throws at the first part that could not go out. Parts this
   * attempt stored carry their turn: marking the last one sent takes it in the same write, and
   * the result says whether it did (the caller then owns finishing the turn).
   */
  return async (
    channel: ChannelDefinition,
    message: InboundMessage,
    parts: readonly MessageRecord[],
    logger: Logger,
    assertHeld?: () => void,
    records?: TurnRecords,
  ): Promise<boolean> => {
    let turnTaken = false;
    for (const [index, part] of parts.entries()) {
      const last = index === parts.length - 1;
      const takeTurn = last && parts[0]?.turn !== undefined;
      // The reply's question goes with the part that stores it (its last), stored or resumed alike.
      const result = await sendPart(channel, message, part, logger, assertHeld, records, takeTurn, part.question);
      turnTaken = result.turnTaken;
      if (result.outcome === 'sent' || result.outcome === 'resent') {
        metrics.increment('reply_parts_sent_total', { channel: channel.id });
        logger.info('reply-sent', { part: part.part, channelMessageId: result.receipt.channelMessageId });
      }
    }
    return turnTaken;
  };
}
