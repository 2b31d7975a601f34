/**
 * A turn's first steps on its batch: open the conversation while the takeover hook decides
 * whether a person holds it (then the batch is relayed, none of it answered), then record each
 * message, its media made text for the transcript and parts for the model.
 */
import type { ChannelDefinition, InboundMessage } from '../contracts/index.js';
import type { Logger } from '../logger.js';
import type { MediaTurn, PreparedMedia } from '../media/inbound-media.js';
import type { InboundBatch } from '../queue/turn-worker.js';
import { inboundMessageId, type OpenedConversation, type RecentMessage, type TurnRecords } from '../store/transcript-store.js';
import type { InboundHandlerOptions } from './inbound-options.js';

/** What a guarded turn's model and transcript read in place of a message's attachments. */
const GUARDED_MEDIA_NOTE = '(The attachment of this message was left out: it could not be processed.)';

/** A batch the assistant answers: its channel is known, its conversation open, no person holds it. */
export interface OpenedBatch {
  channel: ChannelDefinition;
  logger: Logger;
  conversation: OpenedConversation;
}

/** A batch as recorded: every message stored, its media as text (the last one the turn's own). */
export interface RecordedBatch {
  channel: ChannelDefinition;
  logger: Logger;
  conversationId: string;
  created: boolean;
  /** The conversation's recent history as the batch found it. */
  recent: RecentMessage[];
  /** A worker died answering this batch before: no media, a bounded prompt. */
  guarded: boolean;
  /** The batch's last message (the one its reply is keyed to), as recorded. */
  message: InboundMessage;
  /** The messages before it, oldest first, as recorded. */
  earlier: InboundMessage[];
  /** Each message's prepared media, in the batch's order (undefined: none). */
  preparedMedia: (PreparedMedia | undefined)[];
}

/** A recorded message as the conversation's history holds it. */
export function recentOf(channelId: string, received: InboundMessage): RecentMessage {
  return { id: inboundMessageId(channelId, received.messageId), direction: 'inbound', text: received.text };
}

/**
 * Opens the batch's conversation, unless the takeover hook handled the batch (a person holds the
 * conversation, or it is a teammate's entry) or its channel is unknown: then undefined, no turn.
 */
export async function openBatch(
  options: Pick<InboundHandlerOptions, 'channels' | 'transcripts' | 'logger' | 'metrics' | 'takeover'>,
  turn: InboundBatch,
  signal: AbortSignal,
  records: TurnRecords,
): Promise<OpenedBatch | undefined> {
  const { message, earlier } = turn;
  const logger = options.logger.child({ conversationKey: message.conversationKey, messageId: message.messageId });
  const channel = options.channels.get(message.channel);
  if (!channel) {
    logger.error('inbound-unknown-channel', { channel: message.channel });
    options.metrics.increment('inbound_dropped_total', { reason: 'unknown_channel' });
    return;
  }
  const open = () =>
    options.transcripts.openConversation(
      {
        key: message.conversationKey,
        channel: channel.id,
        address: message.from.address,
        ...(message.from.displayName ? { displayName: message.from.displayName } : {}),
      },
      records,
    );
  // A customer's batch is opened while the takeover state is read (one round trip's wait, not
  // two; unused when a person holds it). A teammate's entry never opens it here.
  const opening = message.teammate ? undefined : open();
  if (options.takeover) {
    // While a person holds the conversation every message of the batch is relayed, none
    // answered; a takeover entry is always a batch of its own (the inbox never coalesces it).
    let handled: boolean;
    try {
      handled = await options.takeover([...earlier, message], channel, logger, { signal });
    } catch (error) {
      await opening?.catch(() => undefined);
      throw error;
    }
    if (handled) {
      await opening?.catch(() => undefined);
      return;
    }
  }
  return { channel, logger, conversation: await (opening ?? open()) };
}

/**
 * Records every message of the batch. Media becomes text (summary, caption, transcription) for
 * the transcript and parts for the model, for every message of the batch: within the turn's
 * media bytes (waiting for the worker's room), a file named twice sent once, at most one
 * transcription call per turn. A guarded turn (a worker died answering this batch before) loads
 * no media at all. The turn's media (`media.turn`) is the caller's to end.
 */
export async function recordBatch(
  options: Pick<InboundHandlerOptions, 'transcripts' | 'media'>,
  turn: InboundBatch,
  { channel, logger, conversation }: OpenedBatch,
  signal: AbortSignal,
  records: TurnRecords,
  media: { turn?: MediaTurn },
): Promise<RecordedBatch> {
  const { message, earlier } = turn;
  const { conversationId, created, recent } = conversation;
  const guarded = turn.guarded === true;
  if (guarded) logger.warn('turn-guarded', { messages: earlier.length + 1 });
  else media.turn = await options.media?.startTurn([...earlier, message], { conversationId, signal, logger });
  const batch: InboundMessage[] = [];
  const preparedMedia: (PreparedMedia | undefined)[] = [];
  for (const received of [...earlier, message]) {
    const prepared = await media.turn?.prepare(received);
    const text = prepared?.text ?? (guarded && received.media?.length ? `${received.text}\n${GUARDED_MEDIA_NOTE}`.trim() : received.text);
    batch.push({ ...received, text });
    preparedMedia.push(prepared);
    await options.transcripts.recordInbound(
      {
        conversationId,
        channel: channel.id,
        channelMessageId: received.messageId,
        text,
        receivedAt: new Date(received.receivedAt),
        ...(prepared ? { media: prepared.media } : {}),
      },
      records,
    );
  }
  const last = batch.pop() ?? message;
  return { channel, logger, conversationId, created, recent, guarded, message: last, earlier: batch, preparedMedia };
}
