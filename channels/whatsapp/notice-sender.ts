/**
 * Hand-off notices to team members on WhatsApp, through the same Twilio sender. When the team
 * has a Content template, the notice goes as that template with variables (team members are
 * usually outside WhatsApp's 24-hour window, where free text is refused); else as text.
 */
import { errorStatus, errorText, isRetryableStatus } from '../../src/errors/index.js';
import { NoticeSendError } from '../../src/handoff/webhook-sender.js';
import type { Notice } from '../../src/handoff/notice.js';
import type { Team } from '../../src/handoff/teams.js';
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
