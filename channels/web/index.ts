/**
 * The web widget channel, built by `createWebChannel(settings)`: grounding from the page the
 * visitor is on, replies streamed to the conversation's event log as the model writes them
 * (deltas coalesced to a few writes per second), then the complete message. A visitor the
 * website verified is identified as the contact holding that user's external id or email —
 * read from metadata only the service sets; an anonymous visitor is nobody. A teammate's
 * message carries their name and team, and a takeover's start and end tell the widget who the
 * visitor is talking to (a `state` event).
 */
import { ChannelSendError } from '../../src/errors/index.js';
import type { Logger } from '../../src/logger.js';
import type { ChannelDefinition, InboundMessage } from '../../src/contracts/index.js';
import { APOLOGY_PART, outboundMessageId } from '../../src/store/transcript-store.js';
import { describeCaller } from '../../src/tools/caller.js';
import type { LinkedCustomer } from '../../src/tools/select-entity.js';
import type { AssistantTool } from '../../src/contracts/tool.js';
import type { EventLog, WidgetSender } from './event-log.js';
import { clientMessageIdOf } from './message-ids.js';
import { userFromMetadata } from './visitor-identity.js';

export const WEB_CHANNEL_ID = 'web';

const DELTA_FLUSH_MS = 40;

export interface WebChannelSettings {
  events: EventLog;
  logger: Logger;
  /** Hand-off and entity tools this channel offers. */
  tools?: readonly AssistantTool[];
  roleCapabilityTools?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  /** Finds the contact a website-verified user is (by external id, then email). */
  contacts: { findVerifiedUser(user: { externalId: string; email?: string | undefined; conversationKey?: string }): Promise<LinkedCustomer | undefined> };
}

const ANONYMOUS_VISITOR =
  'The visitor is not signed in on the website, so there is no account data for them. To see invoices or account details they must sign in on the website first.';
const UNLINKED_VISITOR =
  'The visitor is signed in on the website, but their account is not linked to customer data here, so there is no account data for them. To see invoices or account details they must ask the business to link their account.';

const PROMPT_FRAGMENT = [
  "You are replying in a chat widget on the business's website.",
  'Keep answers short and scannable: short paragraphs, a list when it helps, **bold** sparingly, links as [text](https://…).',
  'Answer in the language the visitor writes in.',
].join(' ');

/** Who a message for this inbox entry is from: a teammate's reply is theirs, anything else the assistant's. */
function senderOf(inbound: InboundMessage): WidgetSender {
  const entry = inbound.teammate;
  return entry?.action === 'reply' ? { kind: 'teammate', name: entry.actor.name, team: entry.teamLabel } : { kind: 'assistant' };
}

/** Who holds the conversation after a takeover entry: its holder once taken (or replying), the assistant once ended. */
function holderAfter(inbound: InboundMessage): WidgetSender | undefined {
  const entry = inbound.teammate;
  if (!entry) return undefined;
  if (entry.action === 'reply' || entry.action === 'taken') return { kind: 'teammate', name: entry.actor.name, team: entry.teamLabel };
  return { kind: 'assistant' };
}

export function createWebChannel(settings: WebChannelSettings): ChannelDefinition {
  const { events } = settings;
  const logger = settings.logger.child({ channel: WEB_CHANNEL_ID });
  const pending = new Map<string, { text: string; timer: NodeJS.Timeout | undefined; writes: Promise<unknown> }>();
  const streamId = (inbound: InboundMessage) => outboundMessageId(WEB_CHANNEL_ID, inbound.messageId, 0);
  /** The contact a website-verified visitor is, from metadata only the service sets. */
  const identify = async (inbound: InboundMessage): Promise<LinkedCustomer | undefined> => {
    const user = userFromMetadata(inbound.metadata);
    if (!user) return undefined;
    const contact = await settings.contacts.findVerifiedUser({ externalId: user.id, email: user.email, conversationKey: inbound.conversationKey });
    if (!contact) {
      logger.info('web-user-unlinked', { conversationKey: inbound.conversationKey });
      return undefined;
    }
    const { name, email, customerId, entities } = contact;
    return { name, email, customerId, entities };
  };

  const flush = (inbound: InboundMessage) => {
    const buffer = pending.get(inbound.messageId);
    if (!buffer || !buffer.text) return;
    const text = buffer.text;
    buffer.text = '';
    buffer.timer = undefined;
    buffer.writes = buffer.writes.then(() =>
      events.append(inbound.conversationKey, 'delta', { messageId: streamId(inbound), text }).catch((error: unknown) => {
        logger.warn('widget-delta-failed', { error });
      }),
    );
  };

  return {
    id: WEB_CHANNEL_ID,
    promptFragment: PROMPT_FRAGMENT,
    tools: settings.tools ?? [],
    capabilityTools: {},
    ...(settings.roleCapabilityTools ? { roleCapabilityTools: settings.roleCapabilityTools } : {}),
    identify,
    grounding(turn, _session, caller) {
      // The page's title and URL are whatever the browser reports: untrusted, so not `verified`.
      const { pageUrl, pageTitle, siteName } = turn.inbound.metadata;
      const where = pageUrl ? `is on ${pageTitle ? `"${pageTitle}" (${pageUrl})` : pageUrl}` : 'is on the website';
      const fallback = userFromMetadata(turn.inbound.metadata) ? UNLINKED_VISITOR : ANONYMOUS_VISITOR;
      return [
        { label: 'Visitor', text: `chats in the widget on ${siteName ?? 'the website'} and ${where}.` },
        { label: 'Account', text: describeCaller(caller, fallback), verified: true },
      ];
    },
    splitReply: (text) => [text],
    markdownLinks: true,
    transport: {
      async showTyping(inbound) {
        try {
          await events.append(inbound.conversationKey, 'typing', {});
        } catch (error) {
          logger.warn('widget-typing-failed', { error });
        }
      },
      streamDelta(inbound, delta) {
        const buffer = pending.get(inbound.messageId) ?? { text: '', timer: undefined, writes: Promise.resolve() };
        pending.set(inbound.messageId, buffer);
        buffer.text += delta;
        buffer.timer ??= setTimeout(() => flush(inbound), DELTA_FLUSH_MS);
      },
      async flushDeltas(inbound) {
        const buffer = pending.get(inbound.messageId);
        if (!buffer) return;
        clearTimeout(buffer.timer);
        flush(inbound);
        await buffer.writes;
        pending.delete(inbound.messageId);
      },
      async send(inbound, text, part, options) {
        const id = outboundMessageId(WEB_CHANNEL_ID, inbound.messageId, part);
        const holder = holderAfter(inbound);
        try {
          // A teammate's first reply may be what claims the conversation: the header follows before the message shows.
          if (holder?.kind === 'teammate') await events.append(inbound.conversationKey, 'state', { holder });
          await events.append(inbound.conversationKey, 'message', {
            id,
            role: 'assistant',
            text,
            // A takeover entry's id is not the visitor's message: nothing for the widget to match.
            ...(inbound.teammate ? {} : { replyTo: clientMessageIdOf(inbound.messageId) }),
            sender: senderOf(inbound),
            // A question's answers: buttons under the message (its text lists them too).
            ...(options?.choices?.length ? { choices: options.choices.map((choice) => ({ id: choice.id, label: choice.label })) } : {}),
            ...(options?.choices?.length && options.choicesExpireAt !== undefined ? { choicesExpireAt: options.choicesExpireAt } : {}),
            at: Date.now(),
            ...(part === APOLOGY_PART ? { failed: true as const } : {}),
          });
          // Told after the hand-back message, so the visitor reads why before the header changes.
          if (holder?.kind === 'assistant') await events.append(inbound.conversationKey, 'state', { holder });
        } catch (error) {
          throw new ChannelSendError('could not append the reply to the widget event log', true, undefined, { cause: error });
        }
        return { channelMessageId: id, status: 'delivered' };
      },
      async showHolder(inbound) {
        const holder = holderAfter(inbound);
        if (!holder) return;
        try {
          await events.append(inbound.conversationKey, 'state', { holder });
        } catch (error) {
          logger.warn('widget-state-failed', { error });
        }
      },
    },
  };
}
