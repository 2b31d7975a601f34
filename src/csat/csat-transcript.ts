/**
 * The satisfaction question's messages as part of the conversation: every one of them (the
 * question, the customer's rating and comment, the service's answers) goes into the
 * conversation's recent history in Redis — what the widget reads back after a reload, marked
 * `offModel: 'rating'` so the model never reads it — and into the MongoDB transcript through the
 * outbox. The service's words go through the send ledger like any reply part (stored, claimed,
 * sent once, their delivery id and status recorded), stored in the history before they are sent
 * so a widget that reads the history on seeing one finds it there.
 */
import type { ChannelDefinition, InboundMessage, SendOptions } from '../contracts/index.js';
import { sendPartOnce } from '../store/part-ledger.js';
import { inboundMessageId, type TranscriptStore } from '../store/transcript-store.js';
import type { Seen } from './csat-state.js';

/** The ledger part of the service's words answering a customer's message (a reply's own parts are 0…, 98 and 99 are an outage's). */
export const CSAT_REPLY_PART = 97;

/** What the service's words answer: a customer's message (`replyTo` its id), or nothing (`replyTo` a question's own id). */
interface Said {
  seen: Seen;
  replyTo: string;
  part: number;
  text: string;
  extra?: SendOptions;
}

export function createCsatTranscript(transcripts: TranscriptStore) {
  return {
    /** Stores the service's words (ledger, history, transcript), then sends them once. */
    async say(channel: ChannelDefinition, { seen, replyTo, part, text, extra }: Said): Promise<void> {
      const conversationId = seen.conversationKey;
      const stored = await transcripts.saveApology({ conversationId, channel: channel.id, replyTo, text, part });
      await transcripts.appendRecent(conversationId, [{ id: stored._id, direction: 'outbound', text, offModel: 'rating' }]);
      const inbound: InboundMessage = {
        channel: seen.channel,
        conversationKey: conversationId,
        messageId: replyTo,
        from: seen.from,
        text: '',
        receivedAt: stored.createdAt.getTime(),
        metadata: seen.metadata,
      };
      await sendPartOnce(transcripts, {
        channel,
        inbound,
        part: stored,
        send: () => channel.transport.send(inbound, text, part, ...(extra ? [extra] : [])),
      });
    },

    /** Records the customer's messages that answered the question (history and transcript), before the service answers them. */
    async heard(channel: ChannelDefinition, batch: readonly InboundMessage[]): Promise<void> {
      const last = batch.at(-1);
      if (!last) return;
      for (const message of batch) {
        await transcripts.recordInbound({
          conversationId: message.conversationKey,
          channel: channel.id,
          channelMessageId: message.messageId,
          text: message.text,
          receivedAt: new Date(message.receivedAt),
        });
      }
      await transcripts.appendRecent(
        last.conversationKey,
        batch.map((message) => ({
          id: inboundMessageId(channel.id, message.messageId),
          direction: 'inbound' as const,
          text: message.text,
          offModel: 'rating' as const,
        })),
        last.receivedAt,
      );
    },
  };
}
export type CsatTranscript = ReturnType<typeof createCsatTranscript>;
