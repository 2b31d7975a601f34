/**
 * The holding message of a model outage: when a turn fails because no model answered (every
 * entry of a tier failed or was skipped — a retryable model failure), its message is retried, and
 * a customer who waits `holdingNoticeMs` since the batch's first message gets one short message
 * saying we will answer here; the real answer follows once a model is back. The wait is the
 * conversation's, counted from its oldest waiting message: one holding message per conversation
 * per outage, not per batch (the turn worker notes it sent, `conversation-outage.ts`). The turn worker
 * decides when (`HoldingNotice`, where the next attempt is scheduled): at the threshold when the
 * next attempt would start after it, so the customer hears from us on time rather than a retry
 * later. It goes through the send ledger as a part of its own (HOLDING_PART) of the batch's
 * reply, stored once: whoever finds it there sends nothing again. Not while a teammate holds the
 * conversation (they answer), and never once the real answer is stored.
 */
import { ModelCallError } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { ChannelDefinition, InboundMessage } from '../contracts/index.js';
import type { HoldingNotice, InboundBatch } from '../queue/turn-worker.js';
import { languageOf } from '../words/language.js';
import { serviceWords } from '../words/service-words.js';
import { HOLDING_PART, inboundMessageId, outboundMessageId, type MessageRecord, type MessageStatus, type TranscriptStore } from '../store/transcript-store.js';

/** The holding message in English (a web visitor's comes in their language). */
export const HOLDING_NOTICE_TEXT = serviceWords('en').holding;

/** Sends ledger parts once (the inbound handler's sender). */
type PartSender = (
  channel: ChannelDefinition,
  message: InboundMessage,
  parts: readonly MessageRecord[],
  logger: Logger,
  assertHeld?: () => void,
) => Promise<unknown>;

export interface HoldingNoticeOptions {
  channels: ReadonlyMap<string, ChannelDefinition>;
  transcripts: TranscriptStore;
  metrics: Metrics;
  logger: Logger;
  /** How long the customer waits on an outage before the holding message. */
  holdingNoticeMs: number;
  /** Whether a teammate holds the conversation now (then nobody tells the customer we will answer). */
  heldByTeammate?: (conversationKey: string) => Promise<boolean>;
  deliver: PartSender;
  now?: () => number;
}

/** Ledger states of a part not (known to be) sent yet. */
const unsent = (status: MessageStatus) => status === 'pending' || status === 'sending' || status === 'uncertain';

/** Whether a failed turn is a model outage: no entry of a tier answered, and a retry may. */
const isModelOutage = (error: unknown) => error instanceof ModelCallError && error.retryable;

/** When the batch's first message arrived. */
const firstOf = ({ message, earlier }: InboundBatch) => Math.min(message.receivedAt, ...earlier.map((received) => received.receivedAt));

export function createHoldingNotice(options: HoldingNoticeOptions): HoldingNotice {
  const { transcripts, metrics } = options;
  const now = options.now ?? Date.now;
  return {
    dueAt(batch, error, waitingSince) {
      if (!isModelOutage(error) || batch.message.teammate) return undefined;
      return Math.min(waitingSince, firstOf(batch)) + options.holdingNoticeMs;
    },

    async send(batch, assertHeld) {
      const { message } = batch;
      const logger = options.logger.child({ conversationKey: message.conversationKey, messageId: message.messageId });
      const channel = options.channels.get(message.channel);
      if (!channel) return false;
      try {
        // The lock's fence before anything is written: a holder that may have lost it leaves this to the next.
        assertHeld();
        // Sent already (this outage's earlier wait): nothing more to read.
        const stored = await transcripts.message(outboundMessageId(channel.id, message.messageId, HOLDING_PART));
        if (stored && !unsent(stored.status)) return true;
        if (await options.heldByTeammate?.(message.conversationKey)) {
          logger.info('holding-notice-skipped', { reason: 'taken-over' });
          return false;
        }
        // An earlier attempt stored the real answer: that goes out, not a holding message.
        if ((await transcripts.replyParts(channel.id, message.messageId)).length > 0) return false;
        const notice =
          stored ??
          (await transcripts.saveApology({
            // A conversation's id is its key (`openConversation`).
            conversationId: message.conversationKey,
            channel: channel.id,
            replyTo: message.messageId,
            text: serviceWords(languageOf(message.metadata.language)).holding,
            part: HOLDING_PART,
          }));
        if (!unsent(notice.status)) return true;
        // The history the customer reads back holds the waiting messages and the notice (never the model's): a reload shows them.
        await transcripts.appendRecent(message.conversationKey, [
          ...[...batch.earlier, message].map((waiting) => ({
            id: inboundMessageId(channel.id, waiting.messageId),
            direction: 'inbound' as const,
            text: waiting.text,
          })),
          { id: notice._id, direction: 'outbound', text: notice.text, offModel: 'outage' },
        ]);
        await options.deliver(channel, message, [notice], logger, assertHeld);
        metrics.increment('holding_notices_total', { channel: channel.id });
        logger.warn('holding-notice-sent', { waitedMs: now() - firstOf(batch) });
        return true;
      } catch (noticeError) {
        logger.error('holding-notice-failed', { error: noticeError });
        return false;
      }
    },
  };
}
