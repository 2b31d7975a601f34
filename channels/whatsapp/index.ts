/**
 * The WhatsApp channel, built by `createWhatsappChannel(settings)`: Twilio's wire details,
 * grounding from the sender's profile, WhatsApp-sized replies, the typing indicator and
 * outbound sends through the twilio library. Nothing outside `channels/whatsapp/` knows Twilio.
 */
import type twilio from 'twilio';
import { ChannelSendError, errorField, errorStatus, errorText, isRetryableStatus } from '../../src/errors/index.js';
import type { Logger } from '../../src/logger.js';
import type { ChannelDefinition, GroundingSource, SentStatus } from '../../src/contracts/index.js';
import { describeCaller } from '../../src/tools/caller.js';
import type { ContactReader } from '../../src/tools/select-entity.js';
import type { AssistantTool } from '../../src/contracts/tool.js';
import { createSentLookup } from './sent-lookup.js';
import { splitMessage } from './split-message.js';
import { createTwilioClient } from './twilio-client.js';
import { WHATSAPP_CHANNEL_ID } from './webhook.js';

export interface WhatsappChannelSettings {
  accountSid: string;
  authToken: string;
  /** The WhatsApp sender, `whatsapp:+<number>`. */
  from: string;
  apiBaseUrl?: string | undefined;
  /** Where Twilio posts delivery statuses for the messages we send. */
  statusCallbackUrl: string;
  logger: Logger;
  /** Hand-off and entity tools this channel offers. */
  tools?: readonly AssistantTool[];
  /** Per-role capability bindings, e.g. `{ sales: { handoff: 'book_sales_call' } }`. */
  roleCapabilityTools?: Readonly<Record<string, Readonly<Record<string, string>>>>;
  /** Linked customer records: the contact linked to a number is who `identify` says is talking. */
  contacts?: ContactReader;
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
      async send(inbound, text) {
        try {
          const message = await client.messages.create({
            from: settings.from,
            to: inbound.from.address,
            body: text,
            statusCallback: settings.statusCallbackUrl,
          });
          const status = sentStatuses.has(message.status as SentStatus) ? (message.status as SentStatus) : 'queued';
          return { channelMessageId: message.sid, status };
        } catch (error) {
          const code = errorField(error, 'code');
          const httpStatus = errorStatus(error);
          throw new ChannelSendError(
            `Twilio refused the message: ${errorText(error)}`,
            isRetryableTwilioError(httpStatus),
            typeof code === 'number' || typeof code === 'string' ? code : httpStatus,
            // Without an HTTP answer (a timeout, a dropped connection) Twilio may have it.
            { cause: error, outcomeUnknown: httpStatus === undefined },
          );
        }
      },
      findSent: (inbound, text, claimedAt) => findSent({ to: inbound.from.address, since: claimedAt, matches: (body) => body === text }),
    },
  };
}
