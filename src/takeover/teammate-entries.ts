/**
 * The takeover hook's steps for a teammate's entries that keep the conversation held: their
 * message to the customer, "Ana took this" to the rest of the team, the team's decision on a
 * change the customer asked for.
 */
import type { Logger } from '../logger.js';
import type { ChannelDefinition, InboundMessage, TeammateEntry } from '../contracts/index.js';
import type { HandoffRecord } from '../handoff/handoff-store.js';
import { destinationsOf } from '../handoff/teams.js';
import { codeTag, customerLabel, holderDestination, withMessages, type TakeoverHookOptions, type TellCustomer } from './customer-teller.js';

export function createTeammateEntries(options: TakeoverHookOptions, tellCustomer: TellCustomer) {
  const { transcripts, state, messenger } = options;
  const now = options.now ?? Date.now;

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

  return { onReply, onDecided, onTaken };
}
