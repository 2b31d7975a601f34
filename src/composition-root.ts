/**
 * The one place that knows the concrete channels and roles: it builds every service from the
 * configuration and wires them. Tests call `createServices` with their own model provider and
 * logger; nothing in the environment can choose a test model.
 */
import type { Worker } from 'bullmq';
import type { Connection } from 'mongoose';
import type express from 'express';
import { roster } from '../roles/index.js';
import { createWebPlugin } from '../channels/web/plugin.js';
import { WEB_CHANNEL_ID } from '../channels/web/index.js';
import { createWhatsappPlugin } from '../channels/whatsapp/plugin.js';
import { whatsappMediaSource } from '../channels/whatsapp/media-source.js';
import { WHATSAPP_CHANNEL_ID } from '../channels/whatsapp/webhook.js';
import { teamNoticeSenders, type ChannelContext, type ChannelPlugin } from './channel-plugin.js';
import { configuredSecrets, type Config } from './config.js';
import { ConfigError, errorText } from './errors/index.js';
import { createApp } from './http/app.js';
import { createLogger, redactSecrets, type Logger } from './logger.js';
import { createMediaIntake } from './media/inbound-media.js';
import { createMediaStore, type MediaStore } from './media/media-store.js';
import { createUploadClaims } from './media/upload-claims.js';
import { createOpenAITranscriber } from './media/transcribe.js';
import { createMetrics, type Metrics } from './metrics.js';
import { createProviderBreakers } from './model/provider-breaker.js';
import { createConfiguredModelProvider, type ModelProvider } from './model/provider.js';
import type { ChannelDefinition, RoleDefinition } from './contracts/index.js';
import { validateRoster } from './orchestrator/define-role.js';
import { createOrchestrator, type Orchestrator } from './orchestrator/run-turn.js';
import { createConversationState } from './orchestrator/state/conversation-state.js';
import { createDecisionStore } from './orchestrator/state/decision-store.js';
import { createFactStore } from './orchestrator/state/fact-store.js';
import { createConversationInbox, type ConversationInbox } from './queue/conversation-inbox.js';
import { createTurnQueue, type TurnQueue, type TurnJob } from './queue/turn-queue.js';
import { createTurnWorker } from './queue/turn-worker.js';
import { createInboxNotices, type InboxNotices } from './queue/inbox-notices.js';
import { createIntakeLedger, createIntakeSweeper } from './queue/intake-ledger.js';
import { createAdminRouter } from './admin/admin-router.js';
import { createQueueDashboard } from './admin/queue-dashboard.js';
import { createContactIndex } from './contacts/contact-index.js';
import { createContactStore, type ContactStore } from './contacts/contact-store.js';
import { createHandoffService, type HandoffOutcome } from './handoff/handoff-service.js';
import { createHandoffStore, type Actor, type HandoffStore } from './handoff/handoff-store.js';
import { createHandoffTools, HANDOFF_TOOL_NAMES } from './handoff/handoff-tools.js';
import { createNoticeDelivery } from './handoff/notice-delivery.js';
import { createNoticeQueue } from './handoff/notice-queue.js';
import { parseTeams } from './handoff/teams.js';
import { postWebhookNotice } from './handoff/webhook-sender.js';
import { createTakeoverRuntime } from './handoff/takeover-runtime.js';
import { MAX_TEAMMATE_TEXT, type TakeoverService } from './handoff/takeover.js';
import { createSelectEntityTool } from './tools/select-entity.js';
import { createTranscriptLinks, type TranscriptLinks } from './transcripts/transcript-link.js';
import { createTranscriptRouter } from './transcripts/transcript-router.js';
import { createTranscriptMediaRouter } from './transcripts/transcript-media.js';
import { assertMcpConnected, createMcpToolSource } from './tools/mcp-tool-source.js';
import { createActions, type Actions } from './actions/actions.js';
import { teamDecisionText } from './actions/words.js';
import { createActionStore, type ActionRecord, type ActionStore } from './actions/action-store.js';
import type { PageAction, PageActions } from './transcripts/page-actions.js';
import { createActionRecords } from './actions/action-records.js';
import { createActionSweeper } from './actions/action-sweeper.js';
import { offeredForTeamApproval } from './actions/team-approval.js';
import type { AssistantTool, ToolCallContext } from './contracts/tool.js';
import { createRedis, QUEUE_PREFIX, type RedisClient } from './redis.js';
import { createTranscriptStore, type TranscriptStore } from './store/transcript-store.js';
import { openMongo } from './store/mongo-connection.js';
import { createRecentBackfill } from './store/recent-backfill.js';
import { createTranscriptOutbox, type TranscriptOutbox } from './store/outbox.js';
import { recentMessages } from './store/recent-messages.js';
import { checkRedisEviction, checkRedisPersistence } from './store/redis-persistence.js';
import { createTranscriptWriter } from './store/transcript-writer.js';
import { createRetention } from './store/retention.js';
import { createUsageStore, utcDay } from './store/usage-store.js';
import { createGiveUpHandler, createHoldingNoticeHandler, createInboundHandler } from './turn/handle-inbound.js';
import { createIntake } from './turn/intake.js';
import { createCsatRuntime } from './csat/csat-runtime.js';

/** An action as the transcript page shows it. */
function pageActionOf(record: ActionRecord): PageAction {
  return {
    id: record._id,
    title: record.title,
    summary: record.summary,
    state: record.state,
    confirmer: record.confirmer ?? 'customer',
    createdAt: new Date(record.createdAt),
    expiresAt: new Date(record.expiresAt),
    confirmedBy: record.confirmedBy
      ? record.confirmedBy.via === 'teammate'
        ? (record.confirmedBy.name ?? record.confirmedBy.address)
        : 'the customer'
      : undefined,
    reason: record.reason,
    error: record.error,
  };
}

/** The transcript page's view of a conversation's actions: Redis holds the live state (a day), MongoDB the older records. */
function pageActions(actions: Actions, store: ActionStore, records: ReturnType<typeof createActionRecords>, tell: TellDecision): PageActions {
  return {
    async list(conversationId) {
      const [live, recorded] = await Promise.all([store.ofConversation(conversationId), records.ofConversation(conversationId)]);
      const byId = new Map(recorded.map((record) => [record._id, record]));
      for (const record of live) byId.set(record._id, record);
      return [...byId.values()].sort((left, right) => left.createdAt.localeCompare(right.createdAt)).map(pageActionOf);
    },
    async decide(conversationId, actionId, decision) {
      const decided = await actions.decide(conversationId, actionId, decision);
      if (decided.outcome !== 'decided') return decided;
      await tell(decided.action, { id: decision.by, name: decision.name, via: 'page' });
      return { outcome: 'decided', action: pageActionOf(decided.action) };
    },
  };
}

/** Tells the customer the team's decision on their change, once (the entry's id is the action's). */
type TellDecision = (record: ActionRecord, by: Actor) => Promise<void>;

/** Which tool each role's `{handoff}` capability means, on every channel that has hand-offs. */
const HANDOFF_BINDINGS = {
  sales: { handoff: HANDOFF_TOOL_NAMES.sales },
  support: { handoff: HANDOFF_TOOL_NAMES.support },
  bookkeeper: { handoff: HANDOFF_TOOL_NAMES.support },
};

export interface ServiceOverrides {
  models?: ModelProvider;
  logger?: Logger;
  roles?: readonly RoleDefinition[];
  /** BullMQ key prefix (default `QUEUE_PREFIX`; a hash tag on a cluster), so tests sharing one Redis don't see each other's jobs. */
  queuePrefix?: string;
  /** Namespaces the model providers' circuit breakers in Redis, so tests sharing one Redis don't trip each other's. */
  modelBreakerScope?: string;
  /** The intake sweeper's pace (default: every 5 s, messages noted over 10 s ago), shorter in tests. */
  intakeSweep?: { intervalMs: number; staleMs: number };
  /** How often the action sweeper looks for unanswered confirmations and runs nobody came back to (default 10 s). */
  actionSweepMs?: number;
}

/** How often a worker looks for messages a dead web process left without a job, and how old their note must be. */
const INTAKE_SWEEP = { intervalMs: 5_000, staleMs: 10_000 };

export interface Services {
  config: Config;
  logger: Logger;
  metrics: Metrics;
  redis: RedisClient;
  mongo: Connection;
  transcripts: TranscriptStore;
  /** Transcript records on their way to MongoDB (the worker's transcript writer drains it). */
  outbox: TranscriptOutbox;
  /** Customers' media in GridFS (WhatsApp fetches, widget uploads). */
  media: MediaStore;
  inbox: ConversationInbox;
  queue: TurnQueue;
  orchestrator: Orchestrator;
  channels: ReadonlyMap<string, ChannelDefinition>;
  handoffs: HandoffStore;
  /** Human takeover of handed-off conversations (WhatsApp, the live transcript page, the admin API). */
  takeover: TakeoverService;
  contacts: ContactStore;
  transcriptLinks: TranscriptLinks;
  app: express.Express;
  /** Starts a BullMQ worker for turns in this process; the first also starts retention and hand-off notices. */
  startWorker(): Worker<TurnJob>;
  /** Marks the process as draining: readiness fails from now on. */
  beginShutdown(): void;
  close(): Promise<void>;
}

export async function createServices(config: Config, overrides: ServiceOverrides = {}): Promise<Services> {
  const logger = redactSecrets(overrides.logger ?? createLogger({ level: config.logLevel }), configuredSecrets(config));
  const metrics = createMetrics();
  const redis = createRedis(config);
  const bullConnection = createRedis(config, 'blocking');
  const queuePrefix = overrides.queuePrefix ?? QUEUE_PREFIX;
  // Never waited on: a process starts and answers during a MongoDB outage (indexes follow when it answers).
  const mongoLink = openMongo(config.mongodbUri, logger);
  const mongo = mongoLink.connection;
  await checkRedisPersistence(redis, logger);
  await checkRedisEviction(redis, logger);
  const outboxReader = createRedis(config, 'blocking');
  const outbox = createTranscriptOutbox({
    redis,
    reader: outboxReader,
    maxBacklog: config.transcriptOutbox.max,
    database: mongoLink.databaseName,
    logger,
    metrics,
  });
  const stopOutboxWatch = outbox.watch();
  const transcripts = createTranscriptStore(mongo, { redis, outbox });
  const transcriptWriter = createTranscriptWriter({ connection: mongo, outbox, batchSize: config.transcriptOutbox.batchSize, logger, metrics });
  mongoLink.whenConnected('transcript indexes', () => transcripts.ensureIndexes());
  const media = createMediaStore(mongo, { maxBytes: config.media.maxBytes });
  const uploadClaims = createUploadClaims(redis, { unclaimedTtlMs: config.media.unclaimedTtlMs, database: mongoLink.databaseName });
  // After Redis lost its data (or over existing data): recent history rebuilt from MongoDB's messages once (by the workers).
  const recentBackfill = createRecentBackfill({
    redis,
    conversations: transcripts.conversations,
    messages: transcripts.messages,
    database: mongoLink.databaseName,
    logger,
  });

  const contacts = createContactIndex(createContactStore(mongo), { redis, logger, metrics });
  const usage = createUsageStore(mongo, redis, { flushIntervalMs: config.offload.usageFlushIntervalMs, logger });
  const usageReport = { summary: (from: string, to: string) => usage.summary(from, to, config.model.prices) };
  const handoffStore = createHandoffStore(mongo);
  mongoLink.whenConnected('contact indexes', () => contacts.ensureIndexes());
  mongoLink.whenConnected('hand-off indexes', () => handoffStore.ensureIndexes());
  await contacts.start();
  const teams = parseTeams(config.handoff.teamsJson);
  const noticeOptions = {
    connection: bullConnection,
    attempts: config.handoff.noticeAttempts,
    backoffMs: config.handoff.noticeBackoffMs,
    prefix: queuePrefix,
  };
  const noticeQueue = createNoticeQueue(noticeOptions);
  const handoffs = createHandoffService({ teams, store: handoffStore, notices: noticeQueue, logger, metrics });
  const transcriptLinks = createTranscriptLinks({
    secret: config.transcriptLinks.secret,
    publicBaseUrl: config.publicBaseUrl,
    ttlHours: config.transcriptLinks.ttlHours,
  });
  const selectEntity = createSelectEntityTool();
  const privateFacts = (roleId: string) => roles.find((role) => role.id === roleId)?.privateFacts ?? [];
  const inbox = createConversationInbox(redis);
  const queue = createTurnQueue(bullConnection, queuePrefix, config.worker.retryBackoffMs);
  const intakeLedger = createIntakeLedger(redis, queuePrefix);
  const intake = createIntake(inbox, queue, intakeLedger, outbox, logger);
  const intakeSweeper = createIntakeSweeper({ ledger: intakeLedger, queue, logger, metrics, ...(overrides.intakeSweep ?? INTAKE_SWEEP) });
  const takeover = createTakeoverRuntime({
    config,
    redis,
    connection: bullConnection,
    mongo,
    store: handoffStore,
    teams,
    intake,
    transcripts,
    logger,
    metrics,
    prefix: queuePrefix,
  });

  let shuttingDown = false;
  const draining = new AbortController();
  const channelCoalesceMs: Record<string, number> = {
    [WHATSAPP_CHANNEL_ID]: config.worker.channelCoalesceMs.whatsapp,
    [WEB_CHANNEL_ID]: config.worker.channelCoalesceMs.web,
  };
  // Confirmed actions' state in Redis; a hand-off carries the conversation's changes only a teammate may run.
  const actionStore = createActionStore(redis, outbox);
  const pendingTeamActions = async (conversationId: string) =>
    (await actionStore.ofConversation(conversationId))
      .filter((action) => action.confirmer === 'teammate' && action.state === 'proposed')
      .map((action) => ({ id: action._id, title: action.title, summary: action.summary }));
  const handoffToolsByChannel = new Map<string, readonly AssistantTool[]>();
  const context: ChannelContext = {
    publicBaseUrl: config.publicBaseUrl,
    logger,
    metrics,
    redis,
    transcripts,
    media,
    uploadClaims,
    intake,
    resetConversation: (conversationId) => orchestrator.resetConversation(conversationId),
    // A typing report stands for its channel's quiet period (COALESCE_MS_<CHANNEL>); 0 turns typing reports off.
    reportTyping: async ({ channel, conversationKey }, typing) => {
      const standsMs = channelCoalesceMs[channel] ?? config.worker.coalesceMs;
      if (standsMs > 0) await inbox.reportTyping(conversationKey, typing ? standsMs : 0);
    },
    contacts,
    tools: ({ channelId, ...channel }) => {
      const handoffTools = createHandoffTools({
        service: handoffs,
        recentMessages: (id) => recentMessages(transcripts, id),
        privateFacts,
        pendingActions: pendingTeamActions,
        ...channel,
      });
      handoffToolsByChannel.set(channelId, handoffTools);
      return [...handoffTools, selectEntity];
    },
    roleCapabilityTools: HANDOFF_BINDINGS,
    shutdown: draining.signal,
    teammates: takeover.teammates,
    lastCustomerMessageAt: (conversationKey) => takeover.state.lastCustomerMessageAt(conversationKey),
    lateReplyContentSid: config.takeover.lateReplyContentSid,
  };
  // Each channel is on by its own configuration: no TWILIO_* means no WhatsApp, `WEB_SITES=[]` no widget.
  const plugins = [
    createWhatsappPlugin(config.twilio && { ...config.twilio, trustProxy: config.trustProxy !== false }, context),
    createWebPlugin({ ...config.web, port: config.port, maxUploadBytes: config.media.maxBytes }, context),
  ].filter((plugin): plugin is ChannelPlugin => plugin !== undefined);
  if (plugins.length === 0) {
    throw new ConfigError(
      'invalid configuration: no channel is on: set TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN and TWILIO_WHATSAPP_FROM for WhatsApp, or list a site in WEB_SITES for the widget',
    );
  }
  const channels = new Map<string, ChannelDefinition>(plugins.map(({ channel }) => [channel.id, takeover.observe(channel)]));
  const noticeSenders = teamNoticeSenders(plugins, teams);
  logger.info('channels-enabled', { channels: [...channels.keys()] });
  const roles = overrides.roles ?? roster;
  validateRoster(roles, new Set([...channels.values()].flatMap((channel) => channel.tools.map((tool) => tool.name))));

  const mcp = config.mcp
    ? createMcpToolSource({
        url: config.mcp.url,
        ...(config.mcp.authToken ? { headers: { authorization: `Bearer ${config.mcp.authToken}` } } : {}),
        categoryPrefixes: config.mcp.categoryPrefixes,
        publicCategories: config.mcp.publicCategories,
        scopeArguments: config.mcp.scopeArguments,
        logger,
        metrics,
      })
    : undefined;
  await mcp?.start();
  // Confirmed actions: the MCP server's scoped writes, offered as tools that propose, never run.
  const actions =
    mcp && config.actions.enabled
      ? createActions({
          store: actionStore,
          source: mcp,
          confirmTtlSeconds: config.actions.confirmTtlSeconds,
          irreversibleOptIn: new Set(config.actions.irreversibleTools),
          teamApproval: new Set(config.actions.teamApprovalTools),
          // The channel's own hand-off tool, so the team is reached as the customer would be (and the web asks for a contact first).
          handToTeam: async (record, call) => {
            const handoff = handoffToolsByChannel.get(call.channelId)?.find((tool) => tool.name === HANDOFF_TOOL_NAMES[config.actions.handoffTeam]);
            if (!handoff) return { handedOff: false, reason: 'No team can take this over here: tell the customer to contact the business.' };
            try {
              const outcome = (await handoff.execute({ reason: `Approve a change: ${record.title}`.slice(0, 300) }, call)) as HandoffOutcome;
              return outcome.status === 'unavailable' ? { handedOff: false, reason: outcome.nextSteps } : { handedOff: true, nextSteps: outcome.nextSteps };
            } catch (error) {
              return { handedOff: false, reason: `To hand it to the team with ${handoff.name}: ${errorText(error)}` };
            }
          },
          logger,
          metrics,
        })
      : undefined;

  // Writes a teammate must approve reach the roles admitting reversible writes in their category, even irreversible ones.
  const forTeamApproval = offeredForTeamApproval(new Set(config.actions.teamApprovalTools));
  // Reads and writes as one catalogue, built again only when either listing changed (not per turn).
  let joined: { reads: readonly AssistantTool[]; writes: readonly AssistantTool[]; all: readonly AssistantTool[] } | undefined;
  const withActions = (reads: readonly AssistantTool[], writes: readonly AssistantTool[]) => {
    if (joined?.reads !== reads || joined.writes !== writes) joined = { reads, writes, all: [...reads, ...writes] };
    return joined.all;
  };
  const actionSweeper = actions
    ? createActionSweeper({ store: actionStore, runner: actions.runner, logger, ...(overrides.actionSweepMs ? { intervalMs: overrides.actionSweepMs } : {}) })
    : undefined;
  const actionRecords = createActionRecords(mongo);
  // The customer hears what the team decided, in the service's words, through their conversation's hand-off.
  const tellDecision: TellDecision = async (record, by) => {
    const text = teamDecisionText(record);
    if (!text) return;
    await takeover.service.tellDecision({ conversationId: record.conversationId, by, text, key: `action:${record._id}:decided` });
  };
  const actionAdmin = {
    list: actionRecords.list,
    // A teammate's decision on a change handed to the team: found by `_id` in MongoDB, run from Redis.
    ...(actions
      ? {
          decide: async (actionId: string, decision: { run: boolean; by: string }) => {
            const conversationKey = await actionRecords.conversationOf(actionId);
            if (!conversationKey) return { outcome: 'unknown' as const };
            const decided = await actions.decide(conversationKey, actionId, decision);
            // Decided (and perhaps run) whatever telling the customer does: a failure to queue it is logged, never a 503 that reads "not run".
            if (decided.outcome === 'decided') {
              await tellDecision(decided.action, { id: decision.by, name: decision.by.replace(/^admin:/, ''), via: 'admin' }).catch((error: unknown) =>
                logger.error('action-decision-untold', { actionId, error }),
              );
            }
            return decided;
          },
        }
      : {}),
  };
  const orchestrator = createOrchestrator({
    roles,
    models: overrides.models ?? createConfiguredModelProvider(config.model),
    // Per provider and shared by every worker; a model handed in by a test has none.
    ...(overrides.models
      ? {}
      : {
          breakers: createProviderBreakers({
            redis,
            failures: config.model.breaker.failures,
            cooldownMs: config.model.breaker.cooldownMs,
            ...(overrides.modelBreakerScope ? { scope: overrides.modelBreakerScope } : {}),
          }),
        }),
    limits: config.model,
    logger,
    metrics,
    facts: createFactStore(redis),
    state: createConversationState(redis),
    decisions: createDecisionStore(redis),
    mcpTools: actions ? () => withActions(mcp?.tools() ?? [], forTeamApproval(actions.tools())) : () => mcp?.tools() ?? [],
    usage: (turn) => usage.record({ day: utcDay(new Date()), ...turn }),
    ...(actions
      ? {
          resumeUnlisted: (_tool: string, data: unknown, answer: string, call: ToolCallContext) => actions.resumeUnlisted(data, answer, call),
          staleTap: actions.staleTap,
        }
      : {}),
  });
  const mediaIntake = createMediaIntake({
    store: media,
    sources: config.twilio ? { [WHATSAPP_CHANNEL_ID]: whatsappMediaSource(config.twilio) } : {},
    transcribe: createOpenAITranscriber({ openai: config.model.providers.openai, model: config.media.transcribeModel }),
    maxBytes: config.media.maxBytes,
    maxTurnBytes: config.media.maxTurnBytes,
    maxWorkerBytes: config.media.maxWorkerBytes,
    fetchTimeoutMs: config.media.fetchTimeoutMs,
    transcribeTimeoutMs: config.model.timeoutMs,
    logger,
    metrics,
  });
  // The satisfaction question (src/csat/): wraps the takeover hook and give-up handler; nothing while CSAT_ENABLED is off.
  const csat = createCsatRuntime({
    config: config.csat,
    redis,
    mongo,
    connection: bullConnection,
    prefix: queuePrefix,
    channels,
    logger,
    metrics,
    heldByTeammate: async (conversationKey) => (await takeover.service.current(conversationKey)) !== undefined,
    handoffOpen: async (conversationKey) => (await handoffStore.activeFor(conversationKey)).length > 0,
    handoffRole: async (handoffId) => (await handoffStore.get(handoffId))?.roleId,
    whenStoreReady: (name, task) => mongoLink.whenConnected(name, task),
  });
  const handle = createInboundHandler({
    onTurn: (result) => csat.noteTurn(result),
    channels,
    orchestrator,
    transcripts,
    media: mediaIntake,
    logger,
    metrics,
    takeover: csat.wrapHooks(takeover.hook)({
      teamText: plugins.find((plugin) => plugin.teamText)?.teamText,
      // A held conversation's media: prepared by the same intake, relayed as a link to that one file.
      media: {
        prepare: async (message, { conversationId, signal, logger: turnLogger }) => {
          // The media budget of a turn of its own: the bytes are given back as soon as it is relayed.
          const held = await mediaIntake.startTurn([message], { conversationId, signal, logger: turnLogger });
          try {
            return await held.prepare(message);
          } finally {
            held.end();
          }
        },
        link: (conversationId, mediaId) => transcriptLinks.mediaUrl(conversationId, mediaId, config.takeover.mediaLinkMs),
      },
    }),
  });
  const giveUp = csat.giveUp(createGiveUpHandler({ channels, transcripts, logger, metrics }));
  // A model outage's holding message, sent by the worker while the failed message waits for its retry.
  const holding = createHoldingNoticeHandler({
    channels,
    transcripts,
    logger,
    metrics,
    holdingNoticeMs: config.model.holdingNoticeMs,
    heldByTeammate: async (conversationKey) => (await takeover.service.current(conversationKey)) !== undefined,
  });
  const retention = createRetention({
    connection: bullConnection,
    prefix: queuePrefix,
    retentionDays: config.retentionDays,
    transcripts,
    handoffs: handoffStore,
    media,
    uploads: { claims: uploadClaims, unclaimedTtlMs: config.media.unclaimedTtlMs },
    logger,
    metrics,
  });
  const noticeDelivery = createNoticeDelivery({
    ...noticeOptions,
    notices: noticeQueue,
    store: handoffStore,
    teams,
    senders: { ...noticeSenders, webhook: (url, notice, key) => postWebhookNotice(url, notice, key) },
    transcriptUrl: (conversationId, issuedAt) => transcriptLinks.url(conversationId, issuedAt),
    business: config.businessName,
    lockDurationMs: config.worker.lockTtlMs,
    whenStoreReady: (name, task) => mongoLink.whenConnected(name, task),
    logger,
    metrics,
  });
  const app = createApp({
    trustProxy: config.trustProxy,
    logger,
    metrics,
    isShuttingDown: () => shuttingDown,
    metricsAccess: { ownListener: config.metrics.port !== undefined, token: config.metrics.token },
    readiness: [
      { name: 'redis', check: async () => void (await redis.ping()) },
      // Turns never wait on MongoDB (the transcript outbox does): down or slow, it is `degraded`.
      { name: 'mongodb', check: () => mongoLink.ping(), degradable: true },
      // Turns go on without the business's tools while the MCP server is down (reconnected in the background): `degraded`.
      ...(mcp ? [{ name: 'mcp', check: async () => assertMcpConnected(mcp), degradable: true }] : []),
    ],
    routers: [
      createAdminRouter({
        adminToken: config.adminToken,
        contacts,
        handoffs: handoffStore,
        takeover: takeover.service,
        usage: usageReport,
        actions: actionAdmin,
        logger,
        metrics,
      }),
      createQueueDashboard({ adminToken: config.adminToken, queues: [queue, noticeQueue.queue], logger, metrics }),
      createTranscriptRouter({
        links: transcriptLinks,
        transcripts,
        logger,
        live: { takeover: takeover.service, teams, maxReplyChars: MAX_TEAMMATE_TEXT, shutdown: draining.signal },
        ...(actions ? { actions: pageActions(actions, actionStore, actionRecords, tellDecision) } : {}),
      }),
      createTranscriptMediaRouter({ links: transcriptLinks, media, logger }),
      ...plugins.flatMap(({ router }) => (router ? [router] : [])),
    ],
  });

  const workers: Worker[] = [];
  let notices: InboxNotices | undefined;
  return {
    config,
    logger,
    metrics,
    redis,
    mongo,
    transcripts,
    outbox,
    media,
    inbox,
    queue,
    orchestrator,
    channels,
    handoffs: handoffStore,
    takeover: takeover.service,
    contacts,
    transcriptLinks,
    app,
    startWorker() {
      notices ??= createInboxNotices(redis, logger);
      const worker = createTurnWorker({
        connection: bullConnection,
        redis,
        inbox,
        queue,
        handle,
        giveUp,
        holding,
        logger,
        metrics,
        concurrency: config.worker.concurrency,
        lockTtlMs: config.worker.lockTtlMs,
        coalesceMs: config.worker.coalesceMs,
        channelCoalesceMs,
        // A streamed reply is held only while the customer types, never for the quiet period.
        streamingChannels: new Set([...channels.values()].filter((channel) => channel.transport.streamDelta).map((channel) => channel.id)),
        notices,
        retryBudgetMs: config.worker.retryBudgetMs,
        retryBackoffMs: config.worker.retryBackoffMs,
        shutdown: draining.signal,
        prefix: queuePrefix,
      });
      workers.push(worker);
      // Once per process (each owner starts once): the purge schedule, and hand-off notices with
      // the recovery of those a crash left pending.
      retention.start();
      noticeDelivery.start();
      transcriptWriter.start();
      intakeSweeper.start();
      actionSweeper?.start();
      usage.start();
      takeover.start();
      csat.start();
      mongoLink.whenConnected('recent history copy', async (signal) => void (await recentBackfill.run(signal)));
      return worker;
    },
    beginShutdown() {
      shuttingDown = true;
      draining.abort();
    },
    async close() {
      shuttingDown = true;
      draining.abort();
      await retention.close();
      stopOutboxWatch();
      await noticeDelivery.close();
      await takeover.close();
      await Promise.all(workers.map((worker) => worker.close()));
      await csat.close();
      await notices?.close();
      await intakeSweeper.close();
      await actionSweeper?.close();
      await usage.close();
      contacts.close();
      await mcp?.close().catch(() => undefined);
      await queue.close();
      await noticeQueue.close();
      await Promise.all(plugins.map((plugin) => plugin.close?.()));
      // After the workers: the records their last turns appended are written if MongoDB answers.
      await transcriptWriter.close();
      await Promise.allSettled([redis.quit(), bullConnection.quit(), outboxReader.quit(), mongoLink.close()]);
    },
  };
}
