/**
 * The takeover hook's step for a customer's message while a person holds the conversation: its
 * media prepared by the turn's intake (never for a model), recorded, in history, relayed to the
 * holder (`held-media.ts`).
 */
import type { Logger } from '../logger.js';
import type { ChannelDefinition, InboundMessage } from '../contracts/index.js';
import { inboundMessageId } from '../store/transcript-store.js';
import type { PreparedMedia } from '../media/inbound-media.js';
import type { TakeoverState } from './takeover-state.js';
import { relayPieces, type RelayPiece } from './held-media.js';
import { holderDestination, withMessages, type TakeoverHookOptions } from './customer-teller.js';

export function createHeldRelay(options: TakeoverHookOptions) {
  const { transcripts, state, metrics, messenger } = options;

  /**
   * A customer's message while a person holds the conversation: its media prepared (stored once,
   * a voice note transcribed; no model), recorded, in history, relayed; no turn. Returns whether
   * it made the batch's one transcription.
   */
  const onHeldCustomerMessage = async (
    channel: ChannelDefinition,
    message: InboundMessage,
    takeover: TakeoverState,
    logger: Logger,
    context: { signal: AbortSignal; transcribed: boolean },
  ): Promise<boolean> => {
    const { conversationId, recent } = await transcripts.openConversation({
      key: message.conversationKey,
      channel: channel.id,
      address: message.from.address,
      ...(message.from.displayName ? { displayName: message.from.displayName } : {}),
    });
    // held-media: the same preparation a turn makes (stored once by message id; read back on a retry), its parts unused.
    let prepared: PreparedMedia | undefined;
    if (options.media && (message.media?.length ?? 0) > 0) {
      prepared = await options.media.prepare(message, { conversationId, signal: context.signal, logger, transcribed: context.transcribed });
    }
    const text = prepared?.text ?? message.text;
    await transcripts.recordInbound({
      conversationId,
      channel: channel.id,
      channelMessageId: message.messageId,
      text,
      receivedAt: new Date(message.receivedAt),
      ...(prepared ? { media: prepared.media } : {}),
    });
    const id = inboundMessageId(channel.id, message.messageId);
    await transcripts.saveRecent(conversationId, withMessages(recent, [{ id, direction: 'inbound', text }]), message.receivedAt);
    if (prepared && state.watched(message.conversationKey)) {
      // The live page shows the message again, with its media (it first came as the bare caption).
      await options.service.publish(conversationId, {
        type: 'message',
        message: { id, author: 'customer', text, at: message.receivedAt, media: prepared.media },
      });
    }
    if (takeover.holderWhatsapp) {
      const handoff = await options.store.get(takeover.handoffId);
      const code = handoff?.shortCode ? `\n#${handoff.shortCode}` : '';
      const media = options.media;
      const pieces: RelayPiece[] =
        prepared && media
          ? relayPieces(message.text, prepared.media, (mediaId) => media.link(conversationId, mediaId))
          : [{ text: `Customer: ${message.text}` }];
      for (const [index, piece] of pieces.entries()) {
        await messenger.send({
          key: index === 0 ? `${id}:relay` : `${id}:relay:${index}`,
          handoffId: takeover.handoffId,
          destinations: holderDestination(takeover.holderWhatsapp),
          text: `${piece.text}${code}`,
          ...(piece.mediaUrl ? { mediaUrl: piece.mediaUrl } : {}),
          logger,
        });
      }
    }
    metrics.increment('takeover_customer_messages_total', { channel: channel.id });
    logger.info('takeover-customer-relayed', {
      handoffId: takeover.handoffId,
      holder: takeover.holderId,
      ...(prepared ? { media: prepared.media.map((item) => item.kind ?? item.error ?? 'file') } : {}),
    });
    return prepared?.transcribed ?? false;
  };

  return onHeldCustomerMessage;
}
