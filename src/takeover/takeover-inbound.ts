/**
 * The worker's side of a takeover, called once per inbox entry by `handle-inbound` before any
 * turn, under the conversation's lock (so a teammate's message and an assistant reply never
 * interleave). Returns true when it handled the entry and no assistant turn may run:
 *   - a teammate entry: the teammate's text goes to the customer through the send ledger
 *     (signed by the channel; as the team's approved template outside WhatsApp's 24-hour
 *     window), the rest of the team is told who took it, hand-back tells the customer and the
 *     holder and leaves a one-line summary in the history the assistant's next turn reads;
 *   - a customer message while a person holds the conversation: its media fetched and stored
 *     once (a voice note transcribed), recorded, added to the history, relayed to the holder
 *     ("Customer: …", a photo or PDF as media by signed link, a voice note as its transcription
 *     and the audio, a refused file announced; `held-media.ts`); the model is never called.
 *     That includes a takeover already ended whose end entry is still queued behind the message
 *     (the inbox puts the end ahead of customer messages unless a teammate's message or a turn in
 *     progress comes first): the end entry clears the mirror, so the messages behind it are the
 *     assistant's.
 * A customer message with nobody holding costs one Redis round trip (takeover state, window
 * stamp, live-page event) and no MongoDB read.
 */
import type { Logger } from '../logger.js';
import type { ChannelDefinition, InboundMessage } from '../contracts/index.js';
import { inboundMessageId } from '../store/transcript-store.js';
import type { LiveMessage } from './takeover.js';
import { createCustomerTeller, type TakeoverHookOptions } from './customer-teller.js';
import { createTeammateEntries } from './teammate-entries.js';
import { createEndTeller } from './handed-back.js';
import { createHeldRelay } from './held-relay.js';

export type { HeldMediaOptions, TakeoverHookOptions } from './customer-teller.js';

/**
 * Handles a batch the inbox gave a turn: a takeover entry (always a batch of its own), or customer
 * messages while a person holds the conversation. True: handled, no turn. The takeover is read once
 * for the whole batch, so a takeover starting meanwhile never splits it: all its messages are
 * relayed, or none is (the assistant answers them all).
 */
export type TakeoverHook = (
  batch: readonly InboundMessage[],
  channel: ChannelDefinition,
  logger: Logger,
  /** The turn's signal (a lost lock, a shutdown): a held message's media download stops with it. */
  context?: { signal?: AbortSignal },
) => Promise<boolean>;

export function createTakeoverHook(options: TakeoverHookOptions): TakeoverHook {
  const { state } = options;
  const tellCustomer = createCustomerTeller(options);
  const { onReply, onDecided, onTaken } = createTeammateEntries(options, tellCustomer);
  const onEnded = createEndTeller(options, tellCustomer);
  const onHeldCustomerMessage = createHeldRelay(options);

  return async (batch, channel, logger, context) => {
    const [first] = batch;
    if (!first) return false;
    if (first.teammate) {
      for (const message of batch) {
        const entry = message.teammate;
        if (!entry) throw new Error('a takeover entry was batched with customer messages');
        if (entry.action === 'reply') await onReply(channel, message, entry, logger);
        else if (entry.action === 'taken') await onTaken(channel, message, entry, logger);
        else if (entry.action === 'decided') await onDecided(channel, message, entry, logger);
        else await onEnded(channel, message, entry, logger);
      }
      return true;
    }
    const live = batch.map((message): { type: 'message'; message: LiveMessage } => ({
      type: 'message',
      message: { id: inboundMessageId(channel.id, message.messageId), author: 'customer', text: message.text, at: message.receivedAt },
    }));
    const takeover = await state.onCustomerMessages(first.conversationKey, live);
    if (!takeover) return false;
    // As in a turn: at most one voice note of the batch is transcribed.
    let transcribed = false;
    const signal = context?.signal ?? new AbortController().signal;
    for (const message of batch) {
      transcribed = (await onHeldCustomerMessage(channel, message, takeover, logger, { signal, transcribed })) || transcribed;
    }
    return true;
  };
}
