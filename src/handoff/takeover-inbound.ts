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
import { isRetryable } from '../errors/index.js';
import { partState, sendPartOnce } from '../store/part-ledger.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { ChannelDefinition, InboundMessage, TeammateEntry } from '../contracts/index.js';
import { inboundMessageId, type MessageRecord, type RecentMessage, type TranscriptStore } from '../store/transcript-store.js';
import type { HandoffRecord, HandoffStore } from './handoff-store.js';
import type { TeamMessenger } from './team-messages.js';
import { destinationsOf, type Teams } from './teams.js';
import type { TakeoverState, TakeoverStateStore } from './takeover-state.js';
import type { LiveMessage, TakeoverService } from './takeover.js';
import type { PreparedMedia } from '../media/inbound-media.js';
import { relayPieces, type RelayPiece } from './held-media.js';

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

/** How a held conversation's media reaches its holder: prepared as for a turn (never for a model), relayed by signed link. */
export interface HeldMediaOptions {
  /** Fetches and stores a message's media once, transcribes a voice note (the same intake a turn uses). */
  prepare(
    message: InboundMessage,
    context: { conversationId: string; signal: AbortSignal; logger: Logger; transcribed: boolean },
  ): Promise<PreparedMedia | undefined>;
  /** An absolute, signed, expiring address of one stored media of the conversation (what Twilio fetches for the holder). */
  link(conversationId: string, mediaId: string): string;
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
  now?: () => number;
}

function withMessages(recent: readonly RecentMessage[], additions: readonly RecentMessage[]): RecentMessage[] {
  const known = new Set(recent.map((message) => message.id));
  return [...recent, ...additions.filter((message) => !known.has(message.id))];
}

const customerLabel = (handoff: HandoffRecord) => handoff.customer.name ?? handoff.customer.address.replace(/^whatsapp:/, '');
const codeTag = (handoff: HandoffRecord) => (handoff.shortCode ? ` (#${handoff.shortCode})` : '');
const utcTime = (at: Date | number) => new Date(at).toISOString().slice(11, 16);
/** An idle timeout as a teammate reads it: "1 minute", "30 minutes", "1.5 minutes"; under a minute in seconds ("1 second"). */
export function idleDuration(minutes: number): string {
  if (minutes >= 1) {
    const rounded = Math.round(minutes * 10) / 10;
    return `${rounded} ${rounded === 1 ? 'minute' : 'minutes'}`;
  }
  const seconds = Math.max(1, Math.round(minutes * 60));
  return `${seconds} ${seconds === 1 ? 'second' : 'seconds'}`;
}

export function createTakeoverHook(options: TakeoverHookOptions): TakeoverHook {
  const { transcripts, state, metrics, messenger } = options;
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

  /** The holder's WhatsApp, as a destination (relays and hand-back notes go there). */
  const holderDestination = (whatsapp: string | undefined) => (whatsapp ? [{ id: whatsapp, kind: 'whatsapp' as const, target: whatsapp }] : []);

  const onReply = async (channel: ChannelDefinition, message: InboundMessage, entry: TeammateEntry, logger: Logger) => {
    const handoff = await options.store.get(entry.handoffId);
    const { conversationId, recent } = await transcripts.openConversation({ key: message.conversationKey, channel: channel.id, address: message.from.address });
    const { part, outcome } = await tellCustomer(channel, message, entry, handoff, conversationId, message.text, logger);
    if (outcome === 'sent' || outcome === 'template') {
      await transcripts.saveRecent(
        conversationId,
        withMessages(recent, [{ id: part._id, direction: 'outbound', text: `[${entry.actor.name}, ${entry.teamLabel}] ${message.text}` }]),
      );
      await options.service.publish(conversationId, {
        type: 'message',
        message: {
          id: part._id,
          author: 'teammate',
          name: entry.actor.name,
          text: message.text,
          at: now(),
          ...(outcome === 'template' ? { template: true } : {}),
        },
      });
      logger.info('takeover-reply-sent', {
        handoffId: entry.handoffId,
        by: entry.actor.id,
        template: outcome === 'template',
        latencyMs: now() - message.receivedAt,
      });
    }
    if (handoff) {
      const note =
        outcome === 'template'
          ? `Sent as your team's approved template: the customer's last message was more than 24 hours ago${codeTag(handoff)}.`
          : outcome === 'no_template'
            ? `Not sent: the customer's last message was more than 24 hours ago and the ${entry.teamLabel} has no approved reply template (replyContentSid in HANDOFF_TEAMS)${codeTag(handoff)}.`
            : outcome === 'failed'
              ? `Not delivered: WhatsApp refused the message to ${customerLabel(handoff)}${codeTag(handoff)}.`
              : undefined;
      if (note && entry.actor.via === 'whatsapp') {
        await messenger.send({
          key: `${message.messageId}:note`,
          handoffId: handoff._id,
          destinations: holderDestination(entry.actor.whatsapp),
          text: note,
          logger,
        });
      }
      if (entry.claimed) await tellTeamTaken(handoff, entry, message.messageId, logger);
    }
    if (entry.claimed) {
      // Taken by answering (from WhatsApp): the live page says who has it now, as for "Take over".
      await options.service.publish(message.conversationKey, {
        type: 'takeover',
        status: 'taken',
        handoffId: entry.handoffId,
        by: { name: entry.actor.name, via: entry.actor.via },
        at: message.receivedAt,
      });
    }
    const current = await state.get(message.conversationKey);
    if (current?.handoffId === entry.handoffId) {
      const at = now();
      await state.touch(message.conversationKey, at);
      await options.scheduleIdle({ ...current, lastTeammateAt: at });
    }
  };

  /** "Ana took this" to the team's other destinations. */
  const tellTeamTaken = async (handoff: HandoffRecord, entry: TeammateEntry, key: string, logger: Logger) => {
    const team = options.teams[handoff.team];
    if (!team) return;
    const others = destinationsOf(team).filter((destination) => destination.id !== entry.actor.whatsapp);
    await messenger.send({
      key: `${key}:taken`,
      handoffId: handoff._id,
      destinations: others,
      text: `${entry.actor.name} took this: ${customerLabel(handoff)} — ${handoff.reason}${codeTag(handoff)}.`,
      logger,
    });
  };

  /** What the team decided about a change the customer asked for: told in the service's words, and in history for the assistant. */
  const onDecided = async (channel: ChannelDefinition, message: InboundMessage, entry: TeammateEntry, logger: Logger) => {
    const handoff = await options.store.get(entry.handoffId);
    const { conversationId, recent } = await transcripts.openConversation({ key: message.conversationKey, channel: channel.id, address: message.from.address });
    const { part, outcome } = await tellCustomer(channel, message, entry, handoff, conversationId, message.text, logger);
    if (outcome === 'sent' || outcome === 'template') {
      await transcripts.saveRecent(conversationId, withMessages(recent, [{ id: part._id, direction: 'outbound', text: message.text }]));
      await options.service.publish(conversationId, { type: 'message', message: { id: part._id, author: 'system', text: message.text, at: now() } });
    }
    logger.info('action-decision-told', { handoffId: entry.handoffId, by: entry.actor.id, customer: outcome });
  };

  const onTaken = async (channel: ChannelDefinition, message: InboundMessage, entry: TeammateEntry, logger: Logger) => {
    const handoff = await options.store.get(entry.handoffId);
    if (handoff) await tellTeamTaken(handoff, entry, message.messageId, logger);
    // livepage: the customer's client shows who took the conversation (the widget's header).
    await channel.transport.showHolder?.(message);
    await options.service.publish(message.conversationKey, {
      type: 'takeover',
      status: 'taken',
      handoffId: entry.handoffId,
      by: { name: entry.actor.name, via: entry.actor.via },
      at: message.receivedAt,
    });
    logger.info('takeover-announced', { handoffId: entry.handoffId, channel: channel.id });
  };

  const onEnded = async (channel: ChannelDefinition, message: InboundMessage, entry: TeammateEntry, logger: Logger) => {
    // Every customer message queued ahead of this entry has been relayed; those behind it are the assistant's.
    await state.clear(message.conversationKey, entry.handoffId);
    const handoff = await options.store.get(entry.handoffId);
    const holder = handoff?.takenBy;
    const name = holder?.name ?? 'Our team';
    const idle = entry.reason === 'idle';
    const text = idle
      ? `${name} from the ${entry.teamLabel} is no longer in this chat, so our assistant is back to help you.`
      : entry.action === 'closed'
        ? `${name} from the ${entry.teamLabel} has closed this conversation. Our assistant is here if you need anything else.`
        : `You're back with our assistant. ${name} from the ${entry.teamLabel} has handed this conversation back.`;
    const { conversationId, recent } = await transcripts.openConversation({ key: message.conversationKey, channel: channel.id, address: message.from.address });
    const { part, outcome } = await tellCustomer(channel, message, entry, handoff, conversationId, text, logger);
    // livepage: the customer's client shows the assistant again (also when telling them failed).
    await channel.transport.showHolder?.(message);
    const from = handoff?.takenAt ? utcTime(handoff.takenAt) : undefined;
    const summary: RecentMessage = {
      id: `summary:${entry.handoffId}`,
      direction: 'outbound',
      text:
        `(Summary: ${name} of the ${entry.teamLabel} answered the customer in person` +
        `${from ? ` from ${from} to ${utcTime(now())} UTC` : ''}${handoff ? ` about "${handoff.reason}"` : ''}; ` +
        `${idle ? `handed back after ${idleDuration(options.idleMinutes)} without a reply` : entry.action === 'closed' ? 'closed' : 'handed back'}. ` +
        'The messages marked with their name were theirs; you answer again from here.)',
    };
    await transcripts.saveRecent(
      conversationId,
      withMessages(recent, [summary, ...(outcome === 'sent' || outcome === 'template' ? [{ id: part._id, direction: 'outbound' as const, text }] : [])]),
    );
    if (outcome === 'sent' || outcome === 'template') {
      await options.service.publish(conversationId, { type: 'message', message: { id: part._id, author: 'system', text, at: now() } });
    }
    await options.service.publish(conversationId, {
      type: 'takeover',
      status: entry.action === 'closed' ? 'closed' : 'handed_back',
      handoffId: entry.handoffId,
      by: { name: entry.actor.name, via: entry.actor.via },
      at: message.receivedAt,
    });
    if (handoff && holder?.whatsapp) {
      const who = handoff ? `${customerLabel(handoff)}${codeTag(handoff)}` : 'the customer';
      const note = idle
        ? `No message from you for ${idleDuration(options.idleMinutes)}: the conversation with ${who} went back to the assistant. The customer was told.`
        : entry.actor.id === holder.id
          ? `${entry.action === 'closed' ? 'Closed' : 'Handed back to the assistant'}: ${who}. The customer was told.`
          : `${entry.actor.name} ${entry.action === 'closed' ? 'closed' : 'handed back'} the conversation with ${who}. The customer was told.`;
      await messenger.send({
        key: `${message.messageId}:holder`,
        handoffId: handoff._id,
        destinations: holderDestination(holder.whatsapp),
        text: note,
        logger,
      });
    }
    logger.info('takeover-ended-told', { handoffId: entry.handoffId, action: entry.action, reason: entry.reason, customer: outcome });
  };

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
