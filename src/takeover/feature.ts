/**
 * Takeover as a feature: the Redis mirror, the service every surface calls, the idle hand-back
 * queue, the router for team members' WhatsApp messages, the worker's hook (a held
 * conversation's media prepared by the turn's intake and relayed by a link signed for that one
 * file), and `observe`, which lets the live page hear the assistant's replies as they are sent.
 */
import { duplicateRedis } from '../redis.js';
import type { Config } from '../config.js';
import type { ChannelDefinition, InboundMessage } from '../contracts/index.js';
import type { Infrastructure } from '../infrastructure.js';
import type { MediaIntake } from '../media/inbound-media.js';
import { outboundMessageId, type TranscriptStore } from '../store/transcript-store.js';
import type { HandoffStore } from '../handoff/handoff-store.js';
import { createIdleHandback } from './idle-handback.js';
import { createTakeoverHook, type HeldMediaOptions, type TakeoverHook, type TakeoverHookOptions } from './takeover-inbound.js';
import { createTakeoverStateStore } from './takeover-state.js';
import { createTakeoverService, MAX_TEAMMATE_TEXT } from './takeover.js';
import { createTeamMessenger, type TeamTextSender } from './team-messages.js';
import { createTeammateRouter } from './teammate-router.js';
import type { Teams } from '../handoff/teams.js';
import { NoticeSendError } from '../handoff/webhook-sender.js';

/** Posts a short text to a Slack-compatible webhook (the team's follow-ups). */
async function postWebhookText(url: string, text: string, idempotencyKey: string): Promise<void> {
  let response: Response;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
      body: JSON.stringify({ text }),
      signal: AbortSignal.timeout(10_000),
      redirect: 'error',
    });
  } catch (error) {
    throw new NoticeSendError('webhook unreachable', true, { cause: error });
  }
  await response.arrayBuffer().catch(() => undefined);
  if (!response.ok) throw new NoticeSendError(`webhook answered ${response.status}`, response.status >= 500 || response.status === 429);
}

export function createTakeoverFeature(
  infra: Infrastructure,
  config: Pick<Config, 'takeover'>,
  deps: {
    /** The hand-off records a takeover moves on, and the teams (labels, members). */
    handoff: { store: HandoffStore; teams: Teams };
    /** Queues a takeover entry into its conversation's inbox. */
    intake: { accept(message: InboundMessage): Promise<'accepted' | 'duplicate'> };
    transcripts: TranscriptStore;
    /** The turn's media intake: a held message's media is prepared by it, never for a model. */
    media: Pick<MediaIntake, 'startTurn'>;
    /** A signed, expiring link to one stored media of a conversation. */
    links: { mediaUrl(conversationId: string, mediaId: string, ttlMs: number): string };
    /** Hears what the team answered when a takeover ends (the knowledge feature's FAQ suggestions). */
    knowledge?: TakeoverHookOptions['knowledge'];
  },
) {
  const { redis, logger, metrics } = infra;
  const { store, teams } = deps.handoff;
  const state = createTakeoverStateStore(redis);
  const idle = createIdleHandback({
    connection: infra.bull,
    prefix: infra.queuePrefix,
    idleMs: config.takeover.idleMs,
    state,
    service: () => service,
    logger,
  });
  const service = createTakeoverService({
    store,
    state,
    teams,
    intake: deps.intake,
    scheduleIdle: (takeover) => idle.schedule(takeover),
    subscriberConnection: () => duplicateRedis(redis),
    logger,
    metrics,
  });
  const teammates = createTeammateRouter({ teams, service, store, state, logger, metrics });
  // A held conversation's media: prepared by the same intake, relayed as a link to that one file.
  const media: HeldMediaOptions = {
    prepare: async (message, { conversationId, signal, logger: turnLogger }) => {
      // The media budget of a turn of its own: the bytes are given back as soon as it is relayed.
      const held = await deps.media.startTurn([message], { conversationId, signal, logger: turnLogger });
      try {
        return await held.prepare(message);
      } finally {
        held.end();
      }
    },
    link: (conversationId, mediaId) => deps.links.mediaUrl(conversationId, mediaId, config.takeover.mediaLinkMs),
  };

  return {
    service,
    /** The live transcript page's takeover: the service, each team's label and members, the longest teammate reply. */
    live: { takeover: service, teams, maxReplyChars: MAX_TEAMMATE_TEXT },
    /** What a channel gets: team members' messages (never customer turns), a conversation's messaging window, the late-reply template. */
    forChannels: {
      teammates,
      lastCustomerMessageAt: (conversationKey: string) => state.lastCustomerMessageAt(conversationKey),
      lateReplyContentSid: config.takeover.lateReplyContentSid,
    },
    /** Whether a teammate holds the conversation (no holding message then). */
    heldByTeammate: async (conversationKey: string) => (await service.current(conversationKey)) !== undefined,
    /** The worker's hook, with how the enabled channels reach teammates' WhatsApp. */
    hook(teamText: TeamTextSender | undefined): TakeoverHook {
      return createTakeoverHook({
        transcripts: deps.transcripts,
        state,
        store,
        teams,
        messenger: createTeamMessenger({ connection: infra.mongo, store, whatsapp: teamText, webhook: postWebhookText, metrics }),
        service,
        scheduleIdle: (takeover) => idle.schedule(takeover),
        idleMinutes: config.takeover.idleMs / 60_000,
        metrics,
        media,
        knowledge: deps.knowledge,
      });
    },
    /** The channel, with each assistant reply it sends told to the conversation's subscribers. */
    observe(channel: ChannelDefinition): ChannelDefinition {
      const send = channel.transport.send.bind(channel.transport);
      return {
        ...channel,
        transport: {
          ...channel.transport,
          async send(inbound, text, part, sendOptions) {
            const sent = await send(inbound, text, part, ...(sendOptions ? [sendOptions] : []));
            // Takeover entries are told by the takeover hook itself; nobody watching, nobody is told.
            if (!inbound.teammate && state.watched(inbound.conversationKey)) {
              await service.publish(inbound.conversationKey, {
                type: 'message',
                message: { id: outboundMessageId(channel.id, inbound.messageId, part), author: 'assistant', text, at: Date.now() },
              });
            }
            return sent;
          },
        },
      };
    },
    start(): void {
      idle.start();
    },
    async close(): Promise<void> {
      await idle.close();
      await service.stop();
    },
  };
}
