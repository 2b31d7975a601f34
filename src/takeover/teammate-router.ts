/**
 * What a team member's message to the business number means. It is never a customer turn: it
 * answers a hand-off's customer (a reply to the notice or to a relayed customer message, a
 * short code `#4821 text`, or plain text while they hold one conversation), or hands it back
 * (`#done`, or `#4821 #done` for one of several). Plain text from someone holding more than one
 * conversation is never guessed: they are asked which one. Whatever can't be routed gets a clear
 * answer for the teammate and a log line; the customer never sees it. Knows no channel:
 * addresses are strings, answers are text.
 */
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { MAX_TEAMMATE_TEXT, type TakeoverService } from './takeover.js';
import type { TakeoverStateStore } from './takeover-state.js';
import type { HandoffRecord, HandoffStore } from '../handoff/handoff-store.js';
import { teamMembersByNumber, type Teams } from '../handoff/teams.js';

export interface TeammateInbound {
  /** Whether this address is a team member's: then its messages are never customer turns. */
  isTeammate(address: string): boolean;
  /** Routes a team member's message; `reply` is what to answer them at once, if anything. */
  route(input: { from: string; text: string; messageId: string; repliedTo?: string }): Promise<{ reply?: string }>;
}

const CODE = /^#(\d{4,6})(?=\s|$)\s*/;
const DONE = /^#done\s*[.!]?\s*$/i;
const customerName = (handoff: HandoffRecord) => handoff.customer.name ?? handoff.customer.address.replace(/^whatsapp:/, '');
/** The start of the teammate's text, for the example of how to send it again. */
const preview = (text: string) => (text.length > 40 ? `${text.slice(0, 40)}…` : text);
const HOW_TO = 'To answer a customer, reply to their hand-off notice, or start your message with the code it shows (e.g. "#4821 Hello"). #done hands back.';

export function createTeammateRouter(options: {
  teams: Teams;
  service: Pick<TakeoverService, 'get' | 'teammateReply' | 'handBack'>;
  store: Pick<HandoffStore, 'resolveRef'>;
  state: Pick<TakeoverStateStore, 'holding'>;
  logger: Logger;
  metrics: Metrics;
}): TeammateInbound {
  const members = teamMembersByNumber(options.teams);
  const { logger, metrics } = options;

  /** The hand-offs this number holds now (the Redis list, checked against the record: a stale entry never asks). */
  const heldBy = async (from: string): Promise<HandoffRecord[]> => {
    const ids = await options.state.holding(from);
    const records = await Promise.all(ids.map((id) => options.service.get(id)));
    return records
      .filter((handoff): handoff is HandoffRecord => handoff?.status === 'taken' && handoff.takenBy?.id === from)
      .sort((left, right) => (left.takenAt?.getTime() ?? 0) - (right.takenAt?.getTime() ?? 0));
  };

  const refuse = (reason: string, reply: string, fields: Record<string, unknown> = {}) => {
    metrics.increment('teammate_messages_refused_total', { reason });
    logger.warn('teammate-message-refused', { reason, ...fields });
    return { reply };
  };

  return {
    isTeammate: (address) => members.has(address),

    async route({ from, text, messageId, repliedTo }) {
      const identities = members.get(from) ?? [];
      const trimmed = text.trim();
      const coded = CODE.exec(trimmed);
      const body = coded ? trimmed.slice(coded[0].length).trim() : trimmed;
      let handoffId: string | undefined;
      if (coded?.[1]) {
        handoffId = await options.store.resolveRef({ code: coded[1] });
        if (!handoffId) return refuse('unknown_code', `No open hand-off has the code #${coded[1]}. ${HOW_TO}`, { from, messageId });
      } else if (repliedTo) {
        handoffId = await options.store.resolveRef({ sid: repliedTo });
      }
      if (!handoffId) {
        const held = await heldBy(from);
        if (held.length > 1) {
          // Plain text from someone holding several conversations never guesses: it asks which one.
          const list = held.map((handoff) => `${customerName(handoff)}${handoff.shortCode ? ` (#${handoff.shortCode})` : ''}`).join(', ');
          const example = held.find((handoff) => handoff.shortCode)?.shortCode ?? '4821';
          return refuse(
            'ambiguous',
            `You have ${held.length} conversations: ${list}. Which one is this for? Reply to one of that customer's messages, or start yours with its code (e.g. "#${example} ${preview(body)}"). Your message did not reach anyone.`,
            { from, messageId, handoffIds: held.map((handoff) => handoff._id) },
          );
        }
        handoffId = held[0]?._id;
      }
      if (!handoffId) return refuse('no_target', repliedTo ? `That message is not a hand-off notice. ${HOW_TO}` : HOW_TO, { from, messageId });

      const handoff = await options.service.get(handoffId);
      const identity = handoff && identities.find((candidate) => candidate.team === handoff.team);
      if (!handoff) return refuse('unknown_handoff', `That hand-off no longer exists. ${HOW_TO}`, { from, messageId, handoffId });
      const tag = handoff.shortCode ? ` (#${handoff.shortCode})` : '';
      if (!identity)
        return refuse('not_in_team', `This hand-off${tag} is for the ${options.teams[handoff.team]?.label ?? handoff.team}; your number is not in it.`, {
          from,
          handoffId,
        });
      const actor = { id: from, name: identity.name, via: 'whatsapp' as const, whatsapp: from };

      if (DONE.test(body)) {
        const result = await options.service.handBack({ handoffId, by: actor, reason: 'teammate', holderOnly: true });
        if (result.outcome === 'handed_back') return {};
        if (result.outcome === 'not_holder') {
          return refuse('not_holder', `${result.holder.name} is handling this${tag}; only they can hand it back.`, { from, handoffId });
        }
        if (result.outcome === 'not_taken')
          return refuse('not_taken', `Nothing to hand back${tag}: nobody has taken this hand-off over (it is ${result.status.replace('_', ' ')}).`, {
            from,
            handoffId,
          });
        return refuse('unknown_handoff', `That hand-off no longer exists. ${HOW_TO}`, { from, handoffId });
      }
      if (!body) return refuse('empty', `Your message${tag} is empty: write your answer after the code.`, { from, handoffId });
      if (body.length > MAX_TEAMMATE_TEXT) {
        return refuse('too_long', `Not sent: your message${tag} is longer than ${MAX_TEAMMATE_TEXT} characters; send it in parts.`, { from, handoffId });
      }

      const result = await options.service.teammateReply({ handoffId, by: actor, text: body, messageId });
      switch (result.outcome) {
        case 'queued':
          return {};
        case 'held':
          return refuse('held', `${result.holder.name} is handling this${tag}. Your message did not reach the customer.`, {
            from,
            handoffId,
            holder: result.holder.id,
          });
        case 'ended':
          return refuse(
            'ended',
            `This hand-off${tag} was ${result.status === 'closed' ? 'closed' : 'handed back to the assistant'}; your message did not reach the customer.`,
            {
              from,
              handoffId,
            },
          );
        case 'invalid':
          return refuse('invalid', `Not sent: ${result.error}.`, { from, handoffId });
        default:
          return refuse('unknown_handoff', `That hand-off no longer exists. ${HOW_TO}`, { from, handoffId });
      }
    },
  };
}
