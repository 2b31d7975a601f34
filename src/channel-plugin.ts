/**
 * What a channel contributes to the service, as one object: its `ChannelDefinition` (the
 * outbound side the turn runner uses), its HTTP routes (webhooks, widget API), how a hand-off
 * notice reaches a teammate on it (if teams can be reached there) and how it closes. Each
 * channel's factory takes its own settings — undefined when its configuration is absent, and
 * then the channel is off — plus the shared services below, so the composition root only lists
 * channels and loops over them.
 */
import type { Router } from 'express';
import type { RedisClient } from './redis.js';
import { ConfigError } from './errors/index.js';
import type { HandoffToolOptions } from './handoff/handoff-tools.js';
import type { NoticeSenders } from './handoff/notice-queue.js';
import type { TeamTextSender } from './takeover/team-messages.js';
import type { TeammateInbound } from './takeover/teammate-router.js';
import type { Teams } from './handoff/teams.js';
import { NoticeSendError } from './handoff/webhook-sender.js';
import type { Logger } from './logger.js';
import type { MediaStore } from './media/media-store.js';
import type { UploadClaims } from './media/upload-claims.js';
import type { Metrics } from './metrics.js';
import type { ChannelDefinition, InboundMessage } from './contracts/index.js';
import type { TranscriptStore } from './store/transcript-store.js';
import type { ContactReader, LinkedCustomer } from './tools/select-entity.js';
import type { AssistantTool } from './contracts/tool.js';

export interface ChannelPlugin {
  channel: ChannelDefinition;
  /** Mounted on the service's app; absent for a channel with no HTTP surface (the CLI). */
  router?: Router;
  /** How hand-off notices reach a teammate's address on this channel, and how a lost send is found. */
  notices?: Pick<NoticeSenders, 'whatsapp' | 'findWhatsapp'>;
  /** How short takeover messages (relays, "Ana took this") reach a teammate's WhatsApp. */
  teamText?: TeamTextSender;
  /**
   * Asks the channel's provider once, in the background, whether the configured credentials work
   * (a refusal is one log line); the check `/readyz` reports. Started by `main`, not under NODE_ENV=test.
   */
  startCheck?(): ChannelCheck;
  /** Releases what the channel holds (subscriptions, timers); called once, on shutdown. */
  close?(): Promise<void>;
}

/** A channel's readiness check: fails (degraded) once its provider refused the credentials. */
export interface ChannelCheck {
  name: string;
  check(): Promise<void>;
  degradable: true;
}

/** Starts every channel's credential check (see `ChannelPlugin.startCheck`). */
export function startChannelChecks(plugins: readonly ChannelPlugin[]): ChannelCheck[] {
  return plugins.flatMap((plugin) => (plugin.startCheck ? [plugin.startCheck()] : []));
}

/** The shared services a channel builds its pieces from. */
export interface ChannelContext {
  publicBaseUrl: string;
  logger: Logger;
  metrics: Metrics;
  redis: RedisClient;
  transcripts: TranscriptStore;
  /** Customers' media (the widget's uploads go here). */
  media: MediaStore;
  /** Uploads waiting for the one message that names them (deleted by the workers' sweep when none does). */
  uploadClaims: UploadClaims;
  intake: { accept(message: InboundMessage): Promise<'accepted' | 'duplicate'> };
  /**
   * The customer is typing (true) or stopped (false): a turn waiting on their conversation holds
   * its reply while they type; a report stands for the channel's quiet period.
   */
  reportTyping(message: Pick<InboundMessage, 'channel' | 'conversationKey'>, typing: boolean): Promise<void>;
  /** Starts a conversation over (the widget's "new chat"). */
  resetConversation(conversationId: string): Promise<void>;
  contacts: ContactReader & {
    findVerifiedUser(user: { externalId: string; email?: string | undefined; conversationKey?: string }): Promise<LinkedCustomer | undefined>;
  };
  /** The hand-off and entity tools the channel (`channelId`) offers, built with how its address reaches the customer. */
  tools(options: Pick<HandoffToolOptions, 'reach' | 'onHandoff'> & { channelId: string }): AssistantTool[];
  /** Per-role capability bindings (`{handoff}` → a tool), the same on every channel with hand-offs. */
  roleCapabilityTools: Readonly<Record<string, Readonly<Record<string, string>>>>;
  /** Aborted when the process starts draining. */
  shutdown: AbortSignal;
  /** Team members' messages to the business number (takeover); never customer turns. */
  teammates: TeammateInbound;
  /** When a conversation's customer last wrote (a messaging window), if known. */
  lastCustomerMessageAt(conversationKey: string): Promise<number | undefined>;
  /** The approved template for the assistant's replies outside a messaging window (WhatsApp). */
  lateReplyContentSid: string | undefined;
}

/**
 * The plugins of the channels that are on (each is on by its own configuration: no TWILIO_* means
 * no WhatsApp, `WEB_SITES=[]` no widget). None on stops start-up, saying how to turn one on.
 */
export function enabledPlugins(candidates: readonly (ChannelPlugin | undefined)[]): ChannelPlugin[] {
  const plugins = candidates.filter((plugin): plugin is ChannelPlugin => plugin !== undefined);
  if (plugins.length === 0) {
    throw new ConfigError(
      'invalid configuration: no channel is on: set TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN and TWILIO_WHATSAPP_FROM for WhatsApp, or list a site in WEB_SITES for the widget',
    );
  }
  return plugins;
}

/**
 * The WhatsApp notice senders the enabled channels provide. A team with WhatsApp numbers in
 * HANDOFF_TEAMS while no enabled channel can reach them stops start-up (its notices would
 * never arrive), naming the team.
 */
export function teamNoticeSenders(plugins: readonly ChannelPlugin[], teams: Teams): Pick<NoticeSenders, 'whatsapp' | 'findWhatsapp'> {
  const senders = plugins.find((plugin) => plugin.notices)?.notices;
  if (senders) return senders;
  const unreachable = Object.entries(teams).filter(([, team]) => team.whatsapp.length + team.members.length > 0);
  if (unreachable.length > 0) {
    throw new ConfigError(
      `invalid configuration: HANDOFF_TEAMS: ${unreachable.map(([id]) => id).join(' and ')} lists WhatsApp numbers, but WhatsApp is off (set TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN and TWILIO_WHATSAPP_FROM, or list webhooks only)`,
    );
  }
  return {
    whatsapp: () => Promise.reject(new NoticeSendError('WhatsApp is off: no notice can go to a WhatsApp number', false)),
  };
}
