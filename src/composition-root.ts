/**
 * The one place that knows the concrete channels and roles: the shared infrastructure, a table of
 * features (`src/<feature>/feature.ts`), the channel plugins, and the order of start and close.
 * Tests pass their own model provider and logger; nothing in the environment can choose a test model.
 */
import { roster } from '../roles/index.js';
import { createWebPlugin } from '../channels/web/plugin.js';
import { WEB_CHANNEL_ID } from '../channels/web/index.js';
import { createWhatsappPlugin } from '../channels/whatsapp/plugin.js';
import { whatsappMediaSource } from '../channels/whatsapp/media-source.js';
import { WHATSAPP_CHANNEL_ID } from '../channels/whatsapp/webhook.js';
import { enabledPlugins, startChannelChecks, teamNoticeSenders, type ChannelContext } from './channel-plugin.js';
import type { Config } from './config.js';
import type { ChannelDefinition } from './contracts/index.js';
import { createApp } from './http/app.js';
import { createInfrastructure } from './infrastructure.js';
import type { ServiceOverrides, Services } from './services.js';
import { createActionsFeature } from './actions/feature.js';
import { createAdminFeature } from './admin/feature.js';
import { createContactsFeature } from './contacts/feature.js';
import { createCsatFeature } from './csat/feature.js';
import { createHandoffFeature } from './handoff/feature.js';
import { createGuidanceFeature } from './guidance/feature.js';
import { createKnowledgeFeature, knowledgeOptions } from './knowledge/feature.js';
import { HANDOFF_TOOL_NAMES } from './handoff/handoff-tools.js';
import { createMediaFeature } from './media/feature.js';
import { createOrchestratorFeature } from './orchestrator/feature.js';
import { createPeopleFeature } from './people/feature.js';
import { reportsFeatureOf } from './reports/feature.js';
import { createStoreFeature } from './store/feature.js';
import { createTakeoverFeature } from './takeover/feature.js';
import { createToolsFeature } from './tools/feature.js';
import { createTranscriptsFeature } from './transcripts/feature.js';
import { createTurnsFeature } from './turn/feature.js';

export type { ServiceOverrides, Services } from './services.js';

/** Which tool each role's `{handoff}` capability means, on every channel that has hand-offs. */
const { sales, support } = HANDOFF_TOOL_NAMES;
const HANDOFF_BINDINGS = { sales: { handoff: sales }, support: { handoff: support }, bookkeeper: { handoff: support } };

export async function createServices(config: Config, overrides: ServiceOverrides = {}): Promise<Services> {
  const { infra, ...base } = await createInfrastructure(config, { logger: overrides.logger, queuePrefix: overrides.queuePrefix });
  const { logger, mongo } = infra;
  const roles = overrides.roles ?? roster;
  const privateFacts = (roleId: string) => roles.find((role) => role.id === roleId)?.privateFacts ?? [];
  const channelCoalesceMs = { [WHATSAPP_CHANNEL_ID]: config.worker.channelCoalesceMs.whatsapp, [WEB_CHANNEL_ID]: config.worker.channelCoalesceMs.web };

  // The features, each from the shared infrastructure and its slice of the configuration.
  const reports = reportsFeatureOf(infra, config, () => [...channels.keys()]);
  const store = createStoreFeature(infra, config, reports);
  const { transcripts, outbox } = store;
  const media = createMediaFeature(infra, config, config.twilio ? { [WHATSAPP_CHANNEL_ID]: whatsappMediaSource(config.twilio) } : {});
  const contacts = await createContactsFeature(infra, config);
  const page = createTranscriptsFeature(infra, config, { transcripts, media: media.store });
  const people = createPeopleFeature(infra, config, { contacts, media: media.store, links: page.links, revocations: page.revocations });
  const pendingActions = (conversationId: string) => actions.pendingTeamActions(conversationId);
  const handoff = createHandoffFeature(infra, config, { transcripts, links: page.links, privateFacts, pendingActions, countHandoffs: reports.recordHandoffs });
  store.purgeAlso({ handoffs: handoff.store, ...media.purgeTargets, ...people.purgeTargets });
  const turns = createTurnsFeature(infra, config, { outbox, channelCoalesceMs, intakeSweep: overrides.intakeSweep });
  const knowledgeHooks = { onUsage: store.recordUsage, pendingMisses: store.pendingMisses };
  const knowledge = await createKnowledgeFeature({ ...infra, connection: mongo, ...knowledgeOptions(config, overrides), ...knowledgeHooks });
  const takeover = createTakeoverFeature(infra, config, { handoff, intake: turns.intake, transcripts, media: media.intake, links: page.links, knowledge });
  const tools = createToolsFeature(infra, config);
  const context: ChannelContext = {
    ...infra, // a channel's logger, metrics, Redis and the draining signal
    ...media.forChannels,
    ...turns.forChannels,
    ...takeover.forChannels,
    publicBaseUrl: config.publicBaseUrl,
    transcripts,
    contacts,
    resetConversation: (conversationId) => orchestrator.resetConversation(conversationId),
    tools: (channel) => [...handoff.toolsFor(channel), tools.selectEntity],
    roleCapabilityTools: HANDOFF_BINDINGS,
  };
  // Each channel is on by its own configuration: no TWILIO_* means no WhatsApp, `WEB_SITES=[]` no widget.
  const plugins = enabledPlugins([
    createWhatsappPlugin(config.twilio && { ...config.twilio, trustProxy: config.trustProxy !== false }, context),
    createWebPlugin({ ...config.web, port: config.port, maxUploadBytes: config.media.maxBytes }, context),
  ]);
  const channels = new Map<string, ChannelDefinition>(plugins.map(({ channel }) => [channel.id, takeover.observe(channel)]));
  handoff.deliverBy(teamNoticeSenders(plugins, handoff.teams));
  logger.info('channels-enabled', { channels: [...channels.keys()] });

  const csat = createCsatFeature(infra, config, { channels, takeover: takeover.service, handoffs: handoff.store, transcripts });
  const actions = createActionsFeature(infra, config, { outbox, mcp: tools.mcp, handoffTool: handoff.toolOf, takeover: takeover.service, sweep: overrides });
  const mcpTools = () => [...actions.mcpTools(), ...knowledge.tools()];
  const guidance = createGuidanceFeature(infra, config, { roles, channels: () => channels, models: overrides.models, actions, mcp: tools.mcp, knowledge });
  const turnHooks = { mcpTools, usage: store.recordUsage, knowledge: knowledge.turn, feedback: csat.feedback, guidance: guidance.turn, ...actions.turnHooks };
  const orchestrator = createOrchestratorFeature(infra, config, { roles, channels, overrides, ...turnHooks });
  await tools.start();
  const hook = csat.wrapHooks(takeover.hook)(plugins.find((plugin) => plugin.teamText)?.teamText);
  const turnParts = { channels, orchestrator, transcripts, media: media.intake, takeover: hook, csat, handOver: handoff.giveUpHandOver(HANDOFF_BINDINGS) };
  const answering = turns.answerWith({ ...turnParts, heldByTeammate: takeover.heldByTeammate, warmUp: knowledge.ready });
  const app = createApp({
    ...base.app,
    readiness: [...base.readiness, ...tools.readiness],
    routers: [
      // Before the admin API: its bearer check on /admin would refuse the page's sign-in.
      ...[reports.router, knowledge.router, guidance.router, people.router],
      ...createAdminFeature(infra, config, {
        contacts,
        handoffs: handoff.store,
        takeover: takeover.service,
        usage: store.usageReport,
        actions: actions.admin,
        queues: [turns.queue, handoff.notices.queue],
      }),
      ...page.routers({ live: takeover.live, actions: actions.page, ratings: csat.pageRatings, guidance: guidance.pageEntries }),
      ...plugins.flatMap(({ router }) => (router ? [router] : [])),
    ],
  });

  return {
    config,
    ...infra, // its logger, metrics, Redis and MongoDB connection
    transcripts,
    outbox,
    media: media.store,
    inbox: turns.inbox,
    queue: turns.queue,
    orchestrator,
    channels,
    handoffs: handoff.store,
    takeover: takeover.service,
    contacts,
    knowledge,
    transcriptLinks: page.links,
    app,
    startWorker() {
      const worker = answering.start();
      // Once per process (each owner starts once): retention, notices, the writer, sweepers, idle hand-backs, the knowledge index.
      const starts = [store.startRetention, handoff.start, store.start, reports.start, turns.startSweeper, actions.start, takeover.start];
      for (const start of [...starts, csat.start, knowledge.start, guidance.start, people.start]) start();
      return worker;
    },
    startChannelChecks: () => startChannelChecks(plugins),
    beginShutdown: base.beginShutdown,
    async close() {
      base.beginShutdown();
      for (const close of [store.stopBackground, handoff.closeDelivery, takeover.close, turns.closeWorkers, csat.close, contacts.close]) await close();
      for (const close of [actions.close, store.closeUsage, reports.close, knowledge.close, tools.close, turns.close, handoff.close]) await close();
      await Promise.all([...plugins.map((plugin) => plugin.close?.()), guidance.close()]);
      // After the workers: the records their last turns appended are written if MongoDB answers.
      await store.close();
      await base.close();
    },
  };
}
