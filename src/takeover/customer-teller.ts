/**
 * What the takeover hook's steps share: its options, the history and label helpers, and how a
 * takeover entry's message reaches the customer (through the send ledger, as the team's approved
 * template outside the channel's window).
 */
import { isRetryable } from '../errors/index.js';
import { partState, sendPartOnce } from '../store/part-ledger.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { ChannelDefinition, InboundMessage, TeammateEntry } from '../contracts/index.js';
import type { MessageRecord, RecentMessage, TranscriptStore } from '../store/transcript-store.js';
import type { HandoffRecord, HandoffStore } from '../handoff/handoff-store.js';
import type { Teams } from '../handoff/teams.js';
import type { PreparedMedia } from '../media/inbound-media.js';
import type { TeamMessenger } from './team-messages.js';
import type { TakeoverState, TakeoverStateStore } from './takeover-state.js';
import type { TakeoverService } from './takeover.js';

export interface HeldMediaOptions {
  /** Fetches and stores a message's media once, transcribes a voice note (the same intake a turn uses). */
  prepare(
    message: InboundMessage,
    context: { conversationId: string; signal: AbortSignal; logger: Logger; transcribed: boolean },
  ): Promise<PreparedMedia | undefined>;
  /** An absolute, signed, expiring address of one stored media of the conversation (what Twilio fetches for the holder). */
  link(conversationId: string, mediaId: string): string;
}

/** What the team answered during a takeover, told at its end (a FAQ suggestion is drafted from it, never used before approval). */
export interface TeamExchange {
  handoffId: string;
  channel: string;
  /** The hand-off's reason (what the customer needed). */
  reason: string;
  /** The history since the previous takeover's end (at most the recent history), oldest first; the team's messages unsigned. */
  messages: { from: 'customer' | 'team' | 'assistant'; text: string }[];
  /** Who the customer is and who answered (names, address, contact): what a draft must leave out. */
  personal: string[];
}

export interface TakeoverHookOptions {
  transcripts: TranscriptStore;
  state: TakeoverStateStore;
  store: Pick<HandoffStore, 'get'>;
  teams: Teams;
  messenger: TeamMessenger;
  service: Pick<TakeoverService, 'publish'>;
  scheduleIdle(state: TakeoverState): Promise<void>;
  idleMinutes: number;
  metrics: Metrics;
  /** Without it a held message's media is not fetched: the holder gets its text only. */
  media?: HeldMediaOptions;
  /** Hears what the team answered when a takeover ends (returns at once; must not throw). */
  knowledge?: { fromTeam(exchange: TeamExchange): void } | undefined;
  now?: () => number;
}

export function withMessages(recent: readonly RecentMessage[], additions: readonly RecentMessage[]): RecentMessage[] {
  const known = new Set(recent.map((message) => message.id));
  return [...recent, ...additions.filter((message) => !known.has(message.id))];
}

export const customerLabel = (handoff: HandoffRecord) => handoff.customer.name ?? handoff.customer.address.replace(/^whatsapp:/, '');
export const codeTag = (handoff: HandoffRecord) => (handoff.shortCode ? ` (#${handoff.shortCode})` : '');
export const utcTime = (at: Date | number) => new Date(at).toISOString().slice(11, 16);

/** The holder's WhatsApp, as a destination (relays and hand-back notes go there). */
export const holderDestination = (whatsapp: string | undefined) => (whatsapp ? [{ id: whatsapp, kind: 'whatsapp' as const, target: whatsapp }] : []);

/** Sends one takeover entry's message to the customer, once (see `tellCustomer`). */
export type TellCustomer = ReturnType<typeof createCustomerTeller>;

export function createCustomerTeller(options: TakeoverHookOptions) {
  const { transcripts, state, metrics } = options;
  const now = options.now ?? Date.now;

  /** One customer-facing message through the send ledger: as free text, or as a template. */
  const sendToCustomer = async (
    channel: ChannelDefinition,
    inbound: InboundMessage,
    part: MessageRecord,
    template: { contentSid: string; variables: Record<string, string> } | undefined,
  ) => {
    return sendPartOnce(transcripts, {
      channel,
      inbound,
      part,
      send: () =>
        template && channel.transport.sendTemplate ? channel.transport.sendTemplate(inbound, template) : channel.transport.send(inbound, part.text, 0),
      lookup: !template,
    });
  };

  /** Whether free text would be refused (outside the channel's window since the customer's last message). */
  const outsideWindow = async (channel: ChannelDefinition, conversationKey: string) => {
    const windowMs = channel.transport.freeformWindowMs;
    if (windowMs === undefined) return false;
    const last = await state.lastCustomerMessageAt(conversationKey);
    return last === undefined || now() - last > windowMs;
  };

  /**
   * Stores and sends one message to the customer for a takeover entry (ledger key: the entry's
   * id), as the team's template outside the window. Returns how it went; a refusal for good is
   * recorded failed and reported, an outage is thrown (the entry is retried).
   */
  const tellCustomer = async (
    channel: ChannelDefinition,
    message: InboundMessage,
    entry: TeammateEntry,
    handoff: HandoffRecord | undefined,
    conversationId: string,
    text: string,
    logger: Logger,
  ): Promise<{ part: MessageRecord; outcome: 'sent' | 'template' | 'no_template' | 'failed' }> => {
    const [stored] = await transcripts.replyParts(channel.id, message.messageId);
    const part =
      stored ??
      (
        await transcripts.saveReplyParts({
          conversationId,
          channel: channel.id,
          replyTo: message.messageId,
          roleId: entry.action === 'reply' ? `teammate:${entry.actor.name}` : 'system',
          parts: [text],
        })
      )[0];
    if (!part) throw new Error(`the takeover message ${message.messageId} was not stored`);
    if (partState(part) === 'settled') return { part, outcome: part.status === 'failed' ? 'failed' : 'sent' };
    const team = handoff ? options.teams[handoff.team] : undefined;
    let template: { contentSid: string; variables: Record<string, string> } | undefined;
    if (await outsideWindow(channel, message.conversationKey)) {
      if (!team?.replyContentSid || !channel.transport.sendTemplate) {
        await transcripts.markPartFailed(part._id, 'failed', undefined, 'outside the 24-hour window and no approved reply template (replyContentSid)');
        logger.warn('takeover-message-outside-window', { handoffId: entry.handoffId, action: entry.action });
        return { part, outcome: 'no_template' };
      }
      template = {
        contentSid: team.replyContentSid,
        variables: { '1': entry.action === 'reply' ? `${entry.actor.name} (${entry.teamLabel}): ${text}` : text },
      };
    }
    try {
      await sendToCustomer(channel, message, part, template);
    } catch (error) {
      if (isRetryable(error)) throw error;
      logger.error('takeover-message-failed', { handoffId: entry.handoffId, action: entry.action, error });
      return { part, outcome: 'failed' };
    }
    metrics.increment('takeover_messages_total', { channel: channel.id, action: entry.action, kind: template ? 'template' : 'text' });
    return { part, outcome: template ? 'template' : 'sent' };
  };

  return tellCustomer;
}
