/**
 * What giving up on a message does (`createGiveUpHandler`): the message goes to a person (a
 * hand-off to the team of the conversation's role, its notice carrying the unanswered messages)
 * and the customer is told a person will answer, or, with no team to take it, gets an apology
 * that asks nothing; once per outage either way. The transcript records it failed, a metric and
 * a log say so.
 */
import { errorText } from '../errors/index.js';
import type { GiveUpHandOver } from '../handoff/give-up-handoff.js';
import type { GiveUpHandler, InboundBatch } from '../queue/turn-worker.js';
import {
  APOLOGY_PART,
  HOLDING_PART,
  inboundMessageId,
  outboundMessageId,
  partRecords,
  type MessageStatus,
  type RecentMessage,
} from '../store/transcript-store.js';
import { giveUpWords } from '../words/give-up-words.js';
import { languageOf } from '../words/language.js';
import type { Logger } from '../logger.js';
import type { InboundHandlerOptions } from './inbound-options.js';
import { createLedgerSender } from './ledger-sender.js';
import { withMessages } from './reply-plan.js';

/** Ledger states of a part that left (or may have left) for the customer. */
const sentStatuses = new Set<MessageStatus>(['queued', 'sent', 'delivered', 'read']);
/** Ledger states of a part not (known to be) sent yet. */
const unsentStatuses = new Set<MessageStatus>(['pending', 'sending', 'uncertain']);

export interface GiveUpOptions extends Omit<InboundHandlerOptions, 'orchestrator' | 'onTurn'> {
  handOver?: GiveUpHandOver | undefined;
  /** The role the conversation is routed to (whose team takes what the service gave up on). */
  activeRole?: ((conversationId: string) => Promise<string>) | undefined;
}

/**
 * Records a batch given up on (`failure`): each message failed, the reply's unsent parts failed
 * (the parts as they stand sent to the outbox first), and the history the customer reads back
 * keeps the messages, out of the model's unless a part of their answer was sent. Returns the
 * conversation and its history before the batch (for the hand-over), also when recording failed
 * after the conversation was read (logged); undefined, having recorded nothing, when `held` says
 * the lock may be lost. Throws only when the conversation could not be read.
 */
async function recordGivenUp(
  transcripts: GiveUpOptions['transcripts'],
  channelId: string,
  { message, earlier }: Pick<InboundBatch, 'message' | 'earlier'>,
  failure: string,
  held: (step: string) => boolean,
  logger: Logger,
): Promise<{ conversationId: string; before: { id: string; direction: 'inbound' | 'outbound'; text: string }[] } | undefined> {
  const conversation = await transcripts.openConversation({ key: message.conversationKey, channel: channelId, address: message.from.address });
  const conversationId = conversation.conversationId;
  const batchIds = new Set([...earlier, message].map((failed) => inboundMessageId(channelId, failed.messageId)));
  const before = conversation.recent.filter((entry) => !batchIds.has(entry.id));
  if (!held('record')) return undefined;
  try {
    await recordFailed(transcripts, channelId, { message, earlier }, conversation, failure);
  } catch (recordError) {
    logger.error('inbound-failure-unrecorded', { error: recordError });
  }
  return { conversationId, before };
}

/** `recordGivenUp`'s writes, once the conversation is read. */
async function recordFailed(
  transcripts: GiveUpOptions['transcripts'],
  channelId: string,
  { message, earlier }: Pick<InboundBatch, 'message' | 'earlier'>,
  { conversationId, recent }: { conversationId: string; recent: readonly RecentMessage[] },
  failure: string,
): Promise<void> {
  for (const failed of [...earlier, message]) {
    await transcripts.markInboundFailed({
      conversationId,
      channel: channelId,
      channelMessageId: failed.messageId,
      text: failed.text,
      receivedAt: new Date(failed.receivedAt),
      errorMessage: failure,
    });
  }
  const parts = await transcripts.replyParts(channelId, message.messageId);
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
  const failedIds = new Set([...earlier, message].map((failed) => inboundMessageId(channelId, failed.messageId)));
  const kept = recent
    .filter((entry) => !unsentParts.has(entry.id))
    .map((entry) => (!answered && failedIds.has(entry.id) ? { ...entry, offModel: 'outage' as const } : entry));
  const holding = await transcripts.message(outboundMessageId(channelId, message.messageId, HOLDING_PART));
  await transcripts.saveRecent(
    conversationId,
    withMessages(kept, [
      ...[...earlier, message].map((failed): RecentMessage => ({
        id: inboundMessageId(channelId, failed.messageId),
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
}

/**
 * What giving up on a message does: counts and logs it, records the inbound and its unsent parts as failed (the
 * inbound, the holding message and the apology kept in the history the customer reads back, out of the model's), hands the
 * messages to a person (a hand-off), then sends one message through the ledger saying so (or an apology that asks nothing, with
 * no team to take them) unless the customer had this outage's (`apologised`).
 * Each step is best effort: an outage that outlived the budget may keep some from happening (the log says). Never throws.
 */
export function createGiveUpHandler(options: GiveUpOptions): GiveUpHandler {
  const { transcripts, metrics } = options;
  const deliver = createLedgerSender(transcripts, metrics);

  /** The messages to the conversation's team (best effort: a failure leaves the apology that asks nothing). */
  const handOver = async (failed: {
    channelId: string;
    conversationId: string;
    message: InboundBatch['message'];
    unanswered: string[];
    before: readonly { direction: 'inbound' | 'outbound'; text: string }[];
  }): Promise<{ text: string } | undefined> => {
    if (!options.handOver) return undefined;
    const { message } = failed;
    try {
      const roleId = await options.activeRole?.(failed.conversationId);
      if (!roleId) return undefined;
      const handedOver = await options.handOver({
        channelId: failed.channelId,
        conversationId: failed.conversationId,
        roleId,
        customer: { address: message.from.address, displayName: message.from.displayName },
        unanswered: failed.unanswered,
        before: failed.before.map(({ direction, text }) => ({ direction, text })),
        language: message.metadata.language,
      });
      if (handedOver) metrics.increment('inbound_handed_over_total', { channel: failed.channelId });
      return handedOver;
    } catch (error) {
      options.logger.error('give-up-hand-over-failed', { conversationKey: message.conversationKey, messageId: message.messageId, error });
      return undefined;
    }
  };

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
    const recorded = await recordGivenUp(transcripts, channel.id, { message, earlier }, `given up on (${reason}): ${errorText(error)}`, held, logger).catch(
      (recordError: unknown) => {
        logger.error('inbound-failure-unrecorded', { error: recordError });
        return { conversationId: message.conversationKey, before: [] };
      },
    );
    if (!recorded) return;
    const { conversationId, before } = recorded;
    if (!held('hand-over')) return;
    const handedOver = await handOver({
      channelId: channel.id,
      conversationId,
      message,
      unanswered: [...earlier, message].map((failed) => failed.text),
      before,
    });
    if (!held('apology')) return;
    counted();
    if (apologised) return logger.info('apology-covered', { reason, handedOver: handedOver !== undefined });
    try {
      const apology = await transcripts.saveApology({
        conversationId,
        channel: channel.id,
        replyTo: message.messageId,
        text: handedOver?.text ?? giveUpWords(languageOf(message.metadata.language)).apology,
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
