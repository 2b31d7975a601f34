/**
 * Hand-off notices to team members on WhatsApp, through the same Twilio sender. When the team
 * has a Content template, the notice goes as that template with variables (team members are
 * usually outside WhatsApp's 24-hour window, where free text is refused); else as text. Short
 * takeover messages to team members go as free text.
 */
import { ChannelSendError, errorStatus, errorText, isRetryableStatus } from '../../src/errors/index.js';
import type { TeamTextSender } from '../../src/takeover/team-messages.js';
import { NoticeSendError } from '../../src/handoff/webhook-sender.js';
import type { Notice } from '../../src/handoff/notice.js';
import type { Team } from '../../src/handoff/teams.js';
import { createSentLookup } from './sent-lookup.js';
import { splitMessage } from './split-message.js';
import { createTwilioClient } from './twilio-client.js';

export function createWhatsappNoticeSender(settings: { accountSid: string; authToken: string; from: string; apiBaseUrl?: string | undefined }) {
  const client = createTwilioClient(settings);
  return async (to: string, notice: Notice, team: Team): Promise<string> => {
    try {
      const message = await client.messages.create(
        team.contentSid
          ? { from: settings.from, to, contentSid: team.contentSid, contentVariables: JSON.stringify(notice.templateVariables) }
          : { from: settings.from, to, body: splitMessage(notice.text)[0] ?? notice.text },
      );
      return message.sid;
    } catch (error) {
      throw new NoticeSendError(`Twilio refused the notice: ${errorText(error)}`, isRetryableStatus(errorStatus(error)), { cause: error });
    }
  };
}

/**
 * Free text to a team member (relays of the customer's messages, with their photos, PDFs and
 * voice notes as media, "Ana took this", hand-back notes): the teammate has usually just written, so they are within their 24-hour window.
 */
export function createWhatsappTeamTextSender(settings: {
  accountSid: string;
  authToken: string;
  from: string;
  apiBaseUrl?: string | undefined;
}): TeamTextSender {
  const client = createTwilioClient(settings);
  const lookup = createSentLookup(client, settings.from);
  return {
    async send(to, text, mediaUrl) {
      try {
        // A relayed customer's file goes as media: Twilio fetches it from the service's signed link.
        return (await client.messages.create({ from: settings.from, to, body: text, ...(mediaUrl ? { mediaUrl: [mediaUrl] } : {}) })).sid;
      } catch (error) {
        throw new NoticeSendError(`Twilio refused the team message: ${errorText(error)}`, isRetryableStatus(errorStatus(error)), { cause: error });
      }
    },
    async find(to, text, since) {
      try {
        const [found] = await lookup({ to, since, matches: (body) => body === text });
        return found?.channelMessageId;
      } catch (error) {
        throw new NoticeSendError(errorText(error), error instanceof ChannelSendError ? error.retryable : true, { cause: error });
      }
    },
  };
}
