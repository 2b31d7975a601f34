/**
 * Hand-offs as a feature: the teams (HANDOFF_TEAMS), the hand-off records, the notices queue and
 * its delivery (with the senders the enabled channels give), the service the tools call, and
 * each channel's hand-off tools (kept, so a change only a teammate may run is handed over with
 * the tool the customer's channel offers).
 */
import type { Config } from '../config.js';
import type { AssistantTool } from '../contracts/tool.js';
import type { Infrastructure } from '../infrastructure.js';
import { recentMessages } from '../store/recent-messages.js';
import type { TranscriptStore } from '../store/transcript-store.js';
import { createHandoffService } from './handoff-service.js';
import { createHandoffStore, type HandoffStore } from './handoff-store.js';
import { createGiveUpHandOver } from './give-up-handoff.js';
import { settlingHeldNotices } from './held-notices.js';
import { createHandoffTools, HANDOFF_TOOL_NAMES, type HandoffToolOptions } from './handoff-tools.js';
import { createNoticeDelivery } from './notice-delivery.js';
import { createNoticeQueue, type NoticeSenders } from './notice-queue.js';
import { parseTeams, type TeamId } from './teams.js';
import { postWebhookNotice } from './webhook-sender.js';

export function createHandoffFeature(
  infra: Infrastructure,
  config: Pick<Config, 'handoff' | 'businessName' | 'worker'>,
  deps: {
    transcripts: TranscriptStore;
    /** The signed transcript link a notice carries. */
    links: { url(conversationId: string, issuedAt?: Date): string };
    /** Wraps the store so each hand-off it opens and ends is counted (the reports' roll-ups). */
    countHandoffs?: <S extends HandoffStore>(store: S) => S;
  } & Pick<HandoffToolOptions, 'privateFacts' | 'pendingActions'>,
) {
  const { logger, metrics } = infra;
  const teams = parseTeams(config.handoff.teamsJson);
  const noticeOptions = {
    connection: infra.bull,
    attempts: config.handoff.noticeAttempts,
    backoffMs: config.handoff.noticeBackoffMs,
    prefix: infra.queuePrefix,
  };
  const notices = createNoticeQueue(noticeOptions);
  // Taking, handing back or closing a hand-off withdraws its notices still held for the team's opening.
  const settling = settlingHeldNotices(createHandoffStore(infra.mongo), { teams, notices, logger, metrics });
  // Everyone uses the counted store: hand-offs open through the service, end through takeover.
  const store = deps.countHandoffs ? deps.countHandoffs(settling) : settling;
  infra.mongoLink.whenConnected('hand-off indexes', () => store.ensureIndexes());
  const service = createHandoffService({ teams, store, notices, logger, metrics });
  const toolsByChannel = new Map<string, readonly AssistantTool[]>();
  const reachByChannel = new Map<string, NonNullable<HandoffToolOptions['reach']>>();
  let delivery: ReturnType<typeof createNoticeDelivery> | undefined;

  return {
    teams,
    store,
    notices,
    /** The hand-off tools a channel offers, built with how its address reaches the customer. */
    toolsFor({ channelId, ...channel }: Pick<HandoffToolOptions, 'reach' | 'onHandoff'> & { channelId: string }): AssistantTool[] {
      const tools = createHandoffTools({
        service,
        recentMessages: (id) => recentMessages(deps.transcripts, id),
        privateFacts: deps.privateFacts,
        ...(deps.pendingActions ? { pendingActions: deps.pendingActions } : {}),
        ...channel,
      });
      toolsByChannel.set(channelId, tools);
      if (channel.reach) reachByChannel.set(channelId, channel.reach);
      return tools;
    },
    /** A message the service gave up on, handed to the team of its conversation's role (`bindings`: each role's `{handoff}` tool). */
    giveUpHandOver: (bindings: Readonly<Record<string, Readonly<Record<string, string>>>>) =>
      createGiveUpHandOver({ service, teams, bindings, reachOf: (channelId) => reachByChannel.get(channelId) }),
    /** The channel's tool that hands a conversation to `team` (undefined: the channel has no hand-offs). */
    toolOf: (channelId: string, team: TeamId) => toolsByChannel.get(channelId)?.find((tool) => tool.name === HANDOFF_TOOL_NAMES[team]),
    /** Notices go out through the enabled channels' senders (WhatsApp) and the teams' webhooks. */
    deliverBy(senders: Pick<NoticeSenders, 'whatsapp' | 'findWhatsapp'>): void {
      delivery = createNoticeDelivery({
        ...noticeOptions,
        notices,
        store,
        teams,
        senders: { ...senders, webhook: (url, notice, key) => postWebhookNotice(url, notice, key) },
        transcriptUrl: (conversationId, issuedAt) => deps.links.url(conversationId, issuedAt),
        business: config.businessName,
        lockDurationMs: config.worker.lockTtlMs,
        whenStoreReady: (name, task) => infra.mongoLink.whenConnected(name, task),
        logger,
        metrics,
      });
    },
    /** The notice worker, and the recovery of notices a crash left pending (once per process). */
    start: () => delivery?.start(),
    closeDelivery: async () => delivery?.close(),
    close: () => notices.close(),
  };
}
