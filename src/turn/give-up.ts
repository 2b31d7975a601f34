/**
 * What giving up on a message does (`createGiveUpHandler`): the customer gets one apology, the
 * transcript records it failed, a metric and a log say so.
 */
import { errorText } from '../errors/index.js';
import type { GiveUpHandler } from '../queue/turn-worker.js';
import {
  APOLOGY_PART,
  HOLDING_PART,
  inboundMessageId,
  outboundMessageId,
  partRecords,
  type MessageStatus,
  type RecentMessage,
} from '../store/transcript-store.js';
import { languageOf } from '../words/language.js';
import { serviceWords } from '../words/service-words.js';
import type { InboundHandlerOptions } from './inbound-options.js';
import { createLedgerSender } from './ledger-sender.js';
import { withMessages } from './reply-plan.js';

/** Ledger states of a part that left (or may have left) for the customer. */
const sentStatuses = new Set<MessageStatus>(['queued', 'sent', 'delivered', 'read']);
/** Ledger states of a part not (known to be) sent yet. */
const unsentStatuses = new Set<MessageStatus>(['pending', 'sending', 'uncertain']);

/**
 * What giving up on a message does: counts and logs it, records the inbound and its unsent parts as failed (the
 * inbound, the holding message and the apology kept in the history the customer reads back, out of the model's), then sends one apology through the ledger unless the customer had this outage's (`apologised`).
 * Each step is best effort: an outage that outlived the budget may keep some from happening (the log says). Never throws.
 */
export function createGiveUpHandler(options: Omit<InboundHandlerOptions, 'orchestrator' | 'onTurn'>): GiveUpHandler {
  const { transcripts, metrics } = options;
  const deliver = createLedgerSender(transcripts, metrics);

  return async ({ message, earlier }, { reason, error, attempts, apologised }, assertHeld) => {
    const logger = options.logger.child({ conversationKey: message.conversationKey, messageId: message.messageId });
    /** The lock's fence: a worker that may have lost the conversation leaves giving up to its next holder. */
    const held = (step: string): boolean => {
      try {
        assertHeld();
        return true;
      } catch {
        logger.warn('give-up-left-to-next-holder', { reason, step });
        return false;
      }
    };
    if (!held('start')) return;
    // Counted once the batch is surely given up on here (a holder that lost the lock on the way counts nothing).
    const counted = () => {
      metrics.increment('inbound_failed_total', { channel: message.channel, reason }, earlier.length + 1);
      logger.error('inbound-failed', { reason, attempts, error, messages: earlier.length + 1 });
    };
    // A takeover entry (a teammate's message or action) is no customer message: nothing is
    // recorded as one and the customer gets no apology for it; the log and metric say it failed.
    const channel = message.teammate ? undefined : options.channels.get(message.channel);
    if (!channel) return counted();
    let conversationId = message.conversationKey;
    try {
      const conversation = await transcripts.openConversation({ key: message.conversationKey, channel: channel.id, address: message.from.address });
      conversationId = conversation.conversationId;
      if (!held('record')) return;
      for (const failed of [...earlier, message]) {
        await transcripts.markInboundFailed({
          conversationId,
          channel: channel.id,
          channelMessageId: failed.messageId,
          text: failed.text,
          receivedAt: new Date(failed.receivedAt),
          errorMessage: `given up on (${reason}): ${errorText(error)}`,
        });
      }
      const parts = await transcripts.replyParts(channel.id, message.messageId);
      // The failing attempts' records may never have reached the outbox: the parts as they stand first.
      const records = transcripts.turnRecords();
      records.add(parts.flatMap(partRecords));
      await records.flush();
      for (const part of parts.filter((entry) => unsentStatuses.has(entry.status))) {
        const why = part.status === 'pending' ? 'not sent: its message was given up on' : 'send outcome unknown and could not be resolved';
        await transcripts.markPartFailed(part._id, 'failed', undefined, why);
      }
      // The history keeps what the customer sent and saw (the widget reads it back), out of the model's
      // history unless a part of its answer was sent; a part never sent is not in it.
      const unsentParts = new Set(parts.filter((part) => !sentStatuses.has(part.status)).map((part) => part._id));
      const answered = parts.some((part) => sentStatuses.has(part.status));
      const failedIds = new Set([...earlier, message].map((failed) => inboundMessageId(channel.id, failed.messageId)));
      const kept = conversation.recent
        .filter((entry) => !unsentParts.has(entry.id))
        .map((entry) => (!answered && failedIds.has(entry.id) ? { ...entry, offModel: 'outage' as const } : entry));
      const holding = await transcripts.message(outboundMessageId(channel.id, message.messageId, HOLDING_PART));
      await transcripts.saveRecent(
        conversationId,
        withMessages(kept, [
          ...[...earlier, message].map((failed): RecentMessage => ({
            id: inboundMessageId(channel.id, failed.messageId),
            direction: 'inbound',
            text: failed.text,
            ...(answered ? {} : { offModel: 'outage' as const }),
          })),
          ...(holding && sentStatuses.has(holding.status)
            ? [{ id: holding._id, direction: 'outbound' as const, text: holding.text, offModel: 'outage' as const }]
            : []),
        ]),
        message.receivedAt,
      );
    } catch (recordError) {
      logger.error('inbound-failure-unrecorded', { error: recordError });
    }
    if (!held('apology')) return;
    counted();
    if (apologised) return logger.info('apology-covered', { reason });
    try {
      const apology = await transcripts.saveApology({
        conversationId,
        channel: channel.id,
        replyTo: message.messageId,
        text: serviceWords(languageOf(message.metadata.language)).apology,
      });
      // In the history the customer reads back (never the model's), before it leaves.
      await transcripts.appendRecent(conversationId, [{ id: apology._id, direction: 'outbound', text: apology.text, offModel: 'outage' }]);
      await deliver(channel, message, [apology], logger, assertHeld);
    } catch (apologyError) {
      // Not sent for the fence: the apology stays claimed for the next holder to resolve and send.
      if (!held('apology-send')) return;
      // Past the budget there is no retry: the apology was tried once (and the ledger says how it ended).
      await transcripts
        .markPartFailed(outboundMessageId(channel.id, message.messageId, APOLOGY_PART), 'failed', undefined, errorText(apologyError))
        .catch(() => undefined);
      logger.error('apology-failed', { error: apologyError });
    }
  };
}
