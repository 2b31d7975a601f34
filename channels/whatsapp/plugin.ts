/**
 * WhatsApp as one plugin: the channel (sends through Twilio), the signed webhook routes, and
 * hand-off notices to teammates' WhatsApp numbers. On only with a Twilio account configured
 * (TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN, TWILIO_WHATSAPP_FROM); off, its routes don't exist.
 */
import type { ChannelContext, ChannelPlugin } from '../../src/channel-plugin.js';
import { startTwilioCheck } from './credential-check.js';
import { createWhatsappChannel } from './index.js';
import { createWhatsappNoticeSender, createWhatsappTeamTextSender } from './notice-sender.js';
import { whatsappReach } from './reach.js';
import { createWhatsappNoticeLookup } from './sent-lookup.js';
import { createWhatsappWebhookRouter, WHATSAPP_CHANNEL_ID } from './webhook.js';

export interface WhatsappPluginSettings {
  accountSid: string;
  authToken: string;
  /** The WhatsApp sender, `whatsapp:+<number>`. */
  whatsappFrom: string;
  apiBaseUrl: string | undefined;
  /** Whether a proxy's X-Forwarded-* headers say which URL Twilio signed. */
  trustProxy: boolean;
}

export function createWhatsappPlugin(settings: WhatsappPluginSettings | undefined, context: ChannelContext): ChannelPlugin | undefined {
  if (!settings) return undefined;
  const twilio = { accountSid: settings.accountSid, authToken: settings.authToken, from: settings.whatsappFrom, apiBaseUrl: settings.apiBaseUrl };
  const { logger, metrics } = context;
  return {
    channel: createWhatsappChannel({
      ...twilio,
      statusCallbackUrl: `${context.publicBaseUrl}/webhooks/whatsapp/status`,
      logger,
      tools: context.tools({ channelId: WHATSAPP_CHANNEL_ID, reach: whatsappReach }),
      roleCapabilityTools: context.roleCapabilityTools,
      contacts: context.contacts,
      lateReplyContentSid: context.lateReplyContentSid,
      lastCustomerMessageAt: context.lastCustomerMessageAt,
      choices: { redis: context.redis, metrics },
    }),
    router: createWhatsappWebhookRouter({
      signature: { authToken: settings.authToken, publicBaseUrl: context.publicBaseUrl, trustProxy: settings.trustProxy },
      accountSid: settings.accountSid,
      sender: settings.whatsappFrom,
      intake: context.intake,
      statuses: context.transcripts,
      teammates: context.teammates,
      logger,
      metrics,
    }),
    notices: { whatsapp: createWhatsappNoticeSender(twilio), findWhatsapp: createWhatsappNoticeLookup(twilio) },
    teamText: createWhatsappTeamTextSender(twilio),
    startCheck: () => startTwilioCheck(twilio, logger).readiness,
  };
}
