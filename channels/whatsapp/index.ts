/**
 * The WhatsApp channel, built by `createWhatsappChannel(settings)`: Twilio's wire details,
 * grounding from the sender's profile, WhatsApp-sized replies, the typing indicator and
 * outbound sends through the twilio library. Nothing outside `channels/whatsapp/` knows Twilio.
 */
import type twilio from 'twilio';
import { ChannelSendError, errorField, errorStatus, errorText, isRetryableStatus } from '../../src/errors/index.js';
import type { Logger } from '../../src/logger.js';
import type { ChannelDefinition, GroundingSource, InboundMessage, SentStatus } from '../../src/contracts/index.js';
import { describeCaller } from '../../src/tools/caller.js';
import type { ContactReader } from '../../src/tools/select-entity.js';
import type { AssistantTool } from '../../src/contracts/tool.js';
import { withoutChoiceLines, withoutListedChoices } from '../../src/contracts/choices.js';
import type { Metrics } from '../../src/metrics.js';
import type { RedisClient } from '../../src/redis.js';
import { createChoiceContent } from './choices.js';
import { createSentLookup } from './sent-lookup.js';
import { splitMessage } from './split-message.js';
import { partStatusCallback } from './status-callback.js';
import { createTwilioClient } from './twilio-client.js';
import { WHATSAPP_CHANNEL_ID } from './webhook.js';

export interface WhatsappChannelSettings {
  accountSid: string;
  authToken: string;
  /** The WhatsApp sender, `whatsapp:+<number>`. */
  from: string;
  apiBaseUrl?: string | undefined;
  /** Where Twilio posts delivery statuses for the messages we send (each with its part's ledger key added, `status-callback.ts`). */
  statusCallbackUrl: string;
  logger: Logger;
  /** Hand-off and entity tools this channel offers. */
  tools?: readonly AssistantTool[];
  /** Per-role capability bindings, e.g. `{ sales: { handoff: 'book_sales_call' } }`. */
  roleCapabilityTools?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  /** Linked customer records: the contact linked to a number is who `identify` says is talking. */
  contacts?: ContactReader;
  /** Approved template (one variable: the reply) for the assistant's replies outside the 24-hour window. */
  lateReplyContentSid?: string | undefined;
  /** Sends questions' choices as Content quick replies / lists (see choices.ts): where it caches the Content SIDs. */
  choices?: { redis: RedisClient; metrics: Metrics } | undefined;
  /** When the customer of a conversation last wrote (the window), if known. */
  lastCustomerMessageAt?: (conversationKey: string) => Promise<number | undefined>;
}

/** WhatsApp's customer service window: free text only this long after the customer's last message. */
const WINDOW_MS = 24 * 60 * 60 * 1000;

/** A teammate's reply is signed with their name and team; everything else goes as written. */
function bodyOf(inbound: InboundMessage, text: string): string {
  const teammate = inbound.teammate;
  return teammate?.action === 'reply' ? `${teammate.actor.name} (${teammate.teamLabel}): ${text}` : text;
}

const PROMPT_FRAGMENT = [
  'You are replying on WhatsApp.',
  'Write short, plain messages: a few sentences, no headings or tables, at most a short list.',
  'Use *bold* sparingly. Answer in the language the customer writes in.',
].join(' ');

const UNLINKED_NUMBER =
  'This number is not linked to a customer account: there is no account data for them. To see invoices or account details they must ask the business to link their number.';

/** Twilio error codes worth retrying (rate limits and Twilio-side failures). */
function isRetryableTwilioError(status: number | undefined): boolean {
  return isRetryableStatus(status);
}

const sentStatuses = new Set<SentStatus>(['queued', 'sent', 'delivered', 'read']);

export function createWhatsappChannel(settings: WhatsappChannelSettings): ChannelDefinition {
  const client: twilio.Twilio = createTwilioClient(settings);
  const logger = settings.logger.child({ channel: WHATSAPP_CHANNEL_ID });
  const contacts = settings.contacts;
  const findSent = createSentLookup(client, settings.from);
  const choiceContent =
    settings.choices && createChoiceContent({ client, logger, account: `${settings.accountSid}|${settings.apiBaseUrl ?? ''}`, ...settings.choices });

  return {
    id: WHATSAPP_CHANNEL_ID,
    promptFragment: PROMPT_FRAGMENT,
    tools: settings.tools ?? [],
    capabilityTools: {},
    ...(settings.roleCapabilityTools ? { roleCapabilityTools: settings.roleCapabilityTools } : {}),
    // The number is Twilio's (the webhook is signature-checked): the contact linked to it, by `_id`.
    ...(contacts ? { identify: (inbound) => contacts.get(inbound.from.address) } : {}),
    grounding(turn, _session, caller) {
      // The number and the linked account are verified; the profile name is whatever the customer typed.
      const sources: GroundingSource[] = [
        { label: 'Customer', text: `writes on WhatsApp from ${turn.inbound.from.address.replace(/^whatsapp:/, '')}.`, verified: true },
      ];
      const name = turn.inbound.metadata.profileName;
      if (name) sources.push({ label: 'WhatsApp profile name', text: `"${name}"` });
      if (contacts) sources.push({ label: 'Account', text: describeCaller(caller, UNLINKED_NUMBER), verified: true });
      return sources;
    },
    splitReply: (text) => splitMessage(text),
    isResetCommand: (text) => /^\s*(reset|restart)\s*[.!]?\s*$/i.test(text),
    transport: {
      async showTyping(inbound) {
        try {
          await client.messaging.v2.typingIndicator.create({ channel: 'whatsapp', messageId: inbound.messageId });
        } catch (error) {
          logger.warn('typing-indicator-failed', { messageSid: inbound.messageId, error });
        }
      },
      async send(inbound, text, part, options) {
        // The assistant's reply to a message older than the window: as the late-reply template, unless the customer wrote since.
        if (!inbound.teammate && settings.lateReplyContentSid && Date.now() - inbound.receivedAt > WINDOW_MS) {
          const last = Math.max(inbound.receivedAt, (await settings.lastCustomerMessageAt?.(inbound.conversationKey)) ?? 0);
          if (Date.now() - last > WINDOW_MS) {
            logger.info('reply-sent-as-template', { conversationKey: inbound.conversationKey, messageSid: inbound.messageId });
            return create(inbound, part, { contentSid: settings.lateReplyContentSid, contentVariables: JSON.stringify({ '1': text }) });
          }
        }
        // A question with answers to tap (actions, select_entity): as Content where it can go, else the numbered text.
        if (options?.choices?.length && !inbound.teammate && choiceContent) {
          const content = await choiceContent.contentFor(options.choices, withoutChoiceLines(text, options.choices), options.choicesLanguage);
          if (content) {
            try {
              return await create(inbound, part, content);
            } catch (error) {
              // Refused for good (the sender may not send this Content): the same question as numbered text.
              if (!(error instanceof ChannelSendError) || error.retryable || error.outcomeUnknown) throw error;
              logger.warn('choice-content-refused', { conversationKey: inbound.conversationKey, error });
            }
          }
        }
        return create(inbound, part, { body: bodyOf(inbound, text) });
      },
      freeformWindowMs: WINDOW_MS,
      // A template is the one message answering `inbound`: part 0 of its reply.
      sendTemplate: (inbound, template) => create(inbound, 0, { contentSid: template.contentSid, contentVariables: JSON.stringify(template.variables) }),
      // As it went out: the text, or a question's Content (its body is the text without the numbered choices).
      findSent: (inbound, text, claimedAt) => {
        const sent = bodyOf(inbound, text);
        const asContent = withoutListedChoices(text);
        return findSent({ to: inbound.from.address, since: claimedAt, matches: (body) => body === sent || body === asContent });
      },
    },
  };

  /** Sends part `part` of the reply to `inbound`; its status callbacks name its ledger key (`status-callback.ts`). */
  async function create(inbound: InboundMessage, part: number, content: { body: string } | { contentSid: string; contentVariables: string }) {
    try {
      const message = await client.messages.create({
        from: settings.from,
        to: inbound.from.address,
        ...content,
        statusCallback: partStatusCallback(settings.statusCallbackUrl, WHATSAPP_CHANNEL_ID, inbound, part),
      });
      const status = sentStatuses.has(message.status as SentStatus) ? (message.status as SentStatus) : 'queued';
      return { channelMessageId: message.sid, status };
    } catch (error) {
      const code = errorField(error, 'code');
      const httpStatus = errorStatus(error);
      throw new ChannelSendError(
        // Refused only when Twilio answered; a host that could not be reached is said so.
        `${httpStatus === undefined ? 'Could not reach Twilio' : 'Twilio refused the message'}: ${errorText(error)}`,
        isRetryableTwilioError(httpStatus),
        typeof code === 'number' || typeof code === 'string' ? code : httpStatus,
        // Without an HTTP answer (a timeout, a dropped connection) Twilio may have it.
        { cause: error, outcomeUnknown: httpStatus === undefined },
      );
    }
  }
}
