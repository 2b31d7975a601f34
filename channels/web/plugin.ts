/**
 * The web widget as one plugin: its sites, visitor tokens and event log, the channel, the
 * widget's routes, and the hand-off status the widget shows. On unless WEB_SITES lists no site
 * (`[]`); without WEB_SITES one demo site serves the service's own /demo page.
 */
import type { ChannelContext, ChannelPlugin } from '../../src/channel-plugin.js';
import { createEventLog } from './event-log.js';
import { createWebChannel, WEB_CHANNEL_ID } from './index.js';
import { createWebRouter, type WebRoutesOptions } from './routes.js';
import { createSiteRegistry } from './sites.js';
import { createVisitorTokens } from './visitor-token.js';
import { widgetBundle } from './widget-bundle.js';

type WebLimits = WebRoutesOptions['limits'];

export interface WebPluginSettings extends WebLimits {
  /** Raw WEB_SITES JSON; undefined for the demo site. */
  sitesJson: string | undefined;
  tokenSecret: string;
  /** The service's port, for the demo site's localhost origins. */
  port: number;
  /** MEDIA_MAX_BYTES: the largest attachment a visitor may upload. */
  maxUploadBytes: number;
}

export function createWebPlugin(settings: WebPluginSettings, context: ChannelContext): ChannelPlugin | undefined {
  const sites = createSiteRegistry(settings.sitesJson, context.publicBaseUrl, settings.port);
  if (sites.size === 0) return undefined;
  const { logger } = context;
  const events = createEventLog(context.redis, (error) => logger.warn('widget-events-subscriber-error', { error }));
  const channel = createWebChannel({
    events,
    logger,
    tools: context.tools({
      channelId: WEB_CHANNEL_ID,
      // The widget shows the hand-off's status in the conversation.
      onHandoff: async (call, outcome) => {
        if (outcome.status === 'unavailable') return;
        await events.append(call.conversationId, 'handoff', { team: outcome.team, status: outcome.status, text: outcome.customerText });
      },
    }),
    roleCapabilityTools: context.roleCapabilityTools,
    contacts: context.contacts,
  });
  const limits = {
    maxMessageChars: settings.maxMessageChars,
    visitorMessagesPerMinute: settings.visitorMessagesPerMinute,
    ipMessagesPerMinute: settings.ipMessagesPerMinute,
    visitorRequestsPerMinute: settings.visitorRequestsPerMinute,
    ipRequestsPerMinute: settings.ipRequestsPerMinute,
    streamsPerVisitor: settings.streamsPerVisitor,
    visitorUploadsPerMinute: settings.visitorUploadsPerMinute,
    ipUploadsPerMinute: settings.ipUploadsPerMinute,
    identityMaxAgeSeconds: settings.identityMaxAgeSeconds,
    identityLegacy: settings.identityLegacy,
    visitorPendingUploads: settings.visitorPendingUploads,
    visitorPendingUploadBytes: settings.visitorPendingUploadBytes,
  };
  return {
    channel,
    router: createWebRouter({
      sites,
      tokens: createVisitorTokens(settings.tokenSecret),
      events,
      widget: widgetBundle,
      limits,
      services: context,
      uploads: { store: context.media, claims: context.uploadClaims, maxBytes: settings.maxUploadBytes },
    }),
    close: () => events.close(),
  };
}
