/**
 * The takeover hook's step for a takeover's end (hand-back, close, idle): the mirror cleared, the
 * customer told, a one-line summary left in the history the assistant's next turn reads, the
 * holder told; what the team answered handed to the knowledge feature (`TakeoverHookOptions.knowledge`),
 * which drafts a FAQ suggestion from it off this path.
 */
import type { Logger } from '../logger.js';
import type { ChannelDefinition, InboundMessage, TeammateEntry } from '../contracts/index.js';
import type { RecentMessage } from '../store/transcript-store.js';
import type { HandoffRecord } from '../handoff/handoff-store.js';
import {
  codeTag,
  customerLabel,
  holderDestination,
  utcTime,
  withMessages,
  type TakeoverHookOptions,
  type TeamExchange,
  type TellCustomer,
} from './customer-teller.js';

/** An idle timeout as a teammate reads it: "1 minute", "30 minutes", "1.5 minutes"; under a minute in seconds ("1 second"). */
export function idleDuration(minutes: number): string {
  if (minutes >= 1) {
    const rounded = Math.round(minutes * 10) / 10;
    return `${rounded} ${rounded === 1 ? 'minute' : 'minutes'}`;
  }
  const seconds = Math.max(1, Math.round(minutes * 60));
  return `${seconds} ${seconds === 1 ? 'second' : 'seconds'}`;
}

/** Every team member's name: a teammate the holder names is left out of a suggestion too. */
const rosterNames = (teams: TakeoverHookOptions['teams']) => Object.values(teams).flatMap((team) => team?.members.map((member) => member.name) ?? []);

/** The exchange a takeover leaves in the recent history; none when no teammate wrote in it. */
function teamExchange(recent: readonly RecentMessage[], handoff: HandoffRecord, teamLabel: string, roster: readonly string[]): TeamExchange | undefined {
  const names = new Set<string>();
  const messages = recent.slice(recent.findLastIndex((message) => message.id.startsWith('summary:')) + 1).map((message) => {
    const end = message.direction === 'outbound' && message.text.startsWith('[') ? message.text.indexOf(`, ${teamLabel}] `) : -1;
    if (end < 0) return { from: message.direction === 'inbound' ? ('customer' as const) : ('assistant' as const), text: message.text };
    names.add(message.text.slice(1, end));
    return { from: 'team' as const, text: message.text.slice(end + teamLabel.length + 4) };
  });
  if (names.size === 0) return undefined;
  const { customer, contact } = handoff;
  const personal = [customer.name, customer.address, contact.email, contact.phone, contact.whatsapp, handoff.takenBy?.name, ...names, ...roster];
  return { handoffId: handoff._id, channel: handoff.channel, reason: handoff.reason, messages, personal: personal.filter((value) => value !== undefined) };
}

export function createEndTeller(options: TakeoverHookOptions, tellCustomer: TellCustomer) {
  const { transcripts, state, messenger } = options;
  const now = options.now ?? Date.now;

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
    const exchange = handoff && options.knowledge ? teamExchange(recent, handoff, entry.teamLabel, rosterNames(options.teams)) : undefined;
    if (exchange) options.knowledge?.fromTeam(exchange);
  };

  return onEnded;
}
