/**
 * The takeover's pieces built together from the configuration, so the composition root wires
 * it in a few lines: the Redis mirror, the service every surface calls, the idle hand-back
 * queue, the router for team members' WhatsApp messages, the worker's hook, and `observe`,
 * which lets the live page hear the assistant's replies as they are sent.
 */
import type { ConnectionOptions } from 'bullmq';
import { duplicateRedis, type RedisClient } from '../redis.js';
import type { Connection } from 'mongoose';
import type { Config } from '../config.js';
import type { ChannelDefinition, InboundMessage } from '../contracts/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { outboundMessageId, type TranscriptStore } from '../store/transcript-store.js';
import type { HandoffStore } from '../handoff/handoff-store.js';
import { createIdleHandback } from './idle-handback.js';
import { createTakeoverHook, type HeldMediaOptions, type TakeoverHook } from './takeover-inbound.js';
import { createTakeoverStateStore } from './takeover-state.js';
import { createTakeoverService } from './takeover.js';
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

export function createTakeoverRuntime(options: {
  config: Pick<Config, 'takeover'>;
  redis: RedisClient;
  connection: ConnectionOptions;
  prefix?: string;
  mongo: Connection;
  store: HandoffStore;
  teams: Teams;
  intake: { accept(message: InboundMessage): Promise<'accepted' | 'duplicate'> };
  transcripts: TranscriptStore;
  logger: Logger;
  metrics: Metrics;
}) {
  const { redis, store, teams, logger, metrics } = options;
  const state = createTakeoverStateStore(redis);
  const idle = createIdleHandback({
    connection: options.connection,
    ...(options.prefix ? { prefix: options.prefix } : {}),
    idleMs: options.config.takeover.idleMs,
    state,
    service: () => service,
    logger,
  });
  const service = createTakeoverService({
    store,
    state,
    teams,
    intake: options.intake,
    scheduleIdle: (takeover) => idle.schedule(takeover),
    subscriberConnection: () => duplicateRedis(redis),
    logger,
    metrics,
  });
  const teammates = createTeammateRouter({ teams, service, store, state, logger, metrics });

  return {
    service,
    state,
    teammates,
    /** The worker's hook, with how the enabled channels reach teammates' WhatsApp (and how a held message's media is prepared and linked). */
    hook(senders: { teamText: TeamTextSender | undefined; media?: HeldMediaOptions }): TakeoverHook {
      return createTakeoverHook({
        transcripts: options.transcripts,
        state,
        store,
        teams,
        messenger: createTeamMessenger({ connection: options.mongo, store, whatsapp: senders.teamText, webhook: postWebhookText, metrics }),
        service,
        scheduleIdle: (takeover) => idle.schedule(takeover),
        idleMinutes: options.config.takeover.idleMs / 60_000,
        metrics,
        ...(senders.media ? { media: senders.media } : {}),
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
