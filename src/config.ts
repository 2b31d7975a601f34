/**
 * The environment, parsed once at start-up by one zod schema. A missing or invalid variable
 * stops the process with one line naming it and what it expects. Nothing else in the service
 * reads `process.env`. The schema's fields are written in sections under src/config/ (one per
 * part of the service); this module puts them together, in the order their issues are reported.
 */
import { createHmac } from 'node:crypto';
import { z } from 'zod';
import { ConfigError } from './errors/index.js';
import { csatFields } from './config/csat.js';
import { guidanceConfig, guidanceFields, type GuidanceConfig } from './config/guidance.js';
import { handoffFields } from './config/handoff.js';
import { knowledgeConfig, knowledgeFields, type KnowledgeConfig } from './config/knowledge.js';
import { mediaFields } from './config/media.js';
import { actionFields, mcpFields } from './config/mcp.js';
import { compatibleServers, modelFields, modelLists, providerFields, type EmbeddingSpec, type ModelProviders, type ModelSpec } from './config/model.js';
import { queueFields } from './config/queue.js';
import { reportsConfig, reportsFields, type ReportsConfig } from './config/reports.js';
import { retentionConfig, retentionFields, type RetentionDays } from './config/retention.js';
import { businessFields, operatorFields, serviceFields, type TrustProxy } from './config/service.js';
import { outboxFields, storeFields, transcriptFields } from './config/store.js';
import { webFields } from './config/web.js';
import { channelGroupIssues, whatsappFields } from './config/whatsapp.js';

export type { EmbeddingSpec, ModelSpec } from './config/model.js';
export type { TrustProxy } from './config/service.js';
export { KnowledgeSourceSchema, type KnowledgeConfig } from './config/knowledge.js';

export const EnvSchema = z.object({
  ...serviceFields,
  ...storeFields,
  ...whatsappFields,
  ...providerFields,
  ...mcpFields,
  ...actionFields,
  ...webFields,
  ...businessFields,
  ...handoffFields,
  ...csatFields,
  ...operatorFields,
  ...transcriptFields,
  ...retentionFields,
  ...modelFields,
  ...mediaFields,
  ...queueFields,
  ...outboxFields,
  ...knowledgeFields,
  ...guidanceFields,
  ...reportsFields,
});

export type Env = z.infer<typeof EnvSchema>;

export interface Config {
  env: Env['NODE_ENV'];
  port: number;
  publicBaseUrl: string;
  trustProxy: TrustProxy;
  logLevel: Env['LOG_LEVEL'];
  /** Keys the opaque id that stands for a person in the logs (`npm run log-id`). */
  logIdSecret: string;
  redisUrl: string;
  /** Seed nodes of a Redis Cluster; undefined: the one server at `redisUrl`. */
  redisClusterNodes: { host: string; port: number }[] | undefined;
  mongodbUri: string;
  /** The WhatsApp channel's account; undefined (WhatsApp off) when no TWILIO_* variable is set. */
  twilio: { accountSid: string; authToken: string; whatsappFrom: string; apiBaseUrl: string | undefined } | undefined;
  model: {
    /** The providers that have a key (a compatible server: a base URL), by provider id. */
    providers: ModelProviders;
    /** Each tier's entries in priority order; vision: the models that describe a photo for a text-only reply model. */
    fast: ModelSpec[];
    smart: ModelSpec[];
    vision: ModelSpec[];
    /** MODEL_EMBEDDING: the knowledge's embedding model (undefined: lexical search only). */
    embedding: EmbeddingSpec | undefined;
    /** How long a customer waits on a model outage before the one holding message. */
    holdingNoticeMs: number;
    /** The per-provider circuit breaker: consecutive failures that open it, how long it stays open. */
    breaker: { failures: number; cooldownMs: number };
    maxSteps: number;
    maxOutputTokens: number;
    timeoutMs: number;
    /** Model id → price per million input and output tokens, for cost in the usage report. */
    prices: Record<string, { inputPerMTok: number; outputPerMTok: number }> | undefined;
  };
  worker: {
    concurrency: number;
    lockTtlMs: number;
    coalesceMs: number;
    /** The quiet period per channel (COALESCE_MS_WEB, COALESCE_MS_WHATSAPP; each COALESCE_MS unless set). */
    channelCoalesceMs: { web: number; whatsapp: number };
    shutdownTimeoutMs: number;
    retryBudgetMs: number;
    retryBackoffMs: number;
  };
  /** The usage flush period (see USAGE_FLUSH_INTERVAL_MS). */
  offload: { usageFlushIntervalMs: number };
  mcp:
    | {
        url: string;
        authToken: string | undefined;
        categoryPrefixes: Record<string, string>;
        /** Categories anyone may read; every other read must be scoped to a verified caller. */
        publicCategories: string[];
        /** Tool → argument → what the runtime binds it to. */
        scopeArguments: Record<string, Record<string, 'customer' | 'entity'>>;
      }
    | undefined;
  /**
   * Confirmed actions: on or off, how long a confirmation waits, irreversible writes customers may
   * confirm, writes a teammate must approve (whatever their effect; wins over `irreversibleTools`).
   */
  actions: { enabled: boolean; confirmTtlSeconds: number; irreversibleTools: string[]; teamApprovalTools: string[]; handoffTeam: 'support' | 'sales' };
  businessName: string;
  handoff: { teamsJson: string | undefined; noticeAttempts: number; noticeBackoffMs: number };
  /** The satisfaction question (src/csat/): asked after a hand-back, or after the assistant's last reply went quiet. */
  csat: { enabled: boolean; afterMs: number; cooldownMs: number; commentMs: number };
  /** Human takeover: the idle hand-back and the assistant's late-reply template. */
  takeover: { idleMs: number; lateReplyContentSid: string | undefined; mediaLinkMs: number };
  adminToken: string | undefined;
  /** /metrics: on its own listener when `port` is set, else on the service port only with `token`. */
  metrics: { port: number | undefined; host: string; token: string | undefined };
  transcriptLinks: { secret: string; ttlHours: number };
  /** Days each kind of data is kept (TRANSCRIPT_RETENTION_DAYS unless its own variable is set). */
  retention: RetentionDays;
  transcriptOutbox: { max: number; batchSize: number };
  /**
   * Customers' media: the cap per file (download and upload), the fetch deadline, the transcription
   * model, the media bytes per turn and per worker process sent to the model, and how long an
   * upload no message named is kept.
   */
  media: { maxBytes: number; fetchTimeoutMs: number; transcribeModel: string; maxTurnBytes: number; maxWorkerBytes: number; unclaimedTtlMs: number };
  knowledge: KnowledgeConfig;
  /** The business's guidance: its budgets and check period. */
  guidance: GuidanceConfig;
  reports: ReportsConfig;
  web: {
    /** Raw JSON of the sites list; parsed and validated by the web channel. */
    sitesJson: string | undefined;
    tokenSecret: string;
    maxMessageChars: number;
    visitorMessagesPerMinute: number;
    ipMessagesPerMinute: number;
    /** Sessions, history reads, new chats and event-stream connections, together. */
    visitorRequestsPerMinute: number;
    ipRequestsPerMinute: number;
    streamsPerVisitor: number;
    /** Widget attachments (`/api/widget/uploads`) per visitor and per IP. */
    visitorUploadsPerMinute: number;
    ipUploadsPerMinute: number;
    /** A site's signed identity is accepted this long after its `data-user-ts`. */
    identityMaxAgeSeconds: number;
    /** A `data-user-hash` without `data-user-ts` (never expires) is accepted: for sites not yet sending the issue time. */
    identityLegacy: boolean;
    /** A visitor's uploads no message named yet: how many, and their bytes together. */
    visitorPendingUploads: number;
    visitorPendingUploadBytes: number;
  };
}

/** Parses the environment; throws a ConfigError whose message is one line per bad variable. */
export function loadConfig(environment: NodeJS.ProcessEnv = process.env): Config {
  const present = Object.fromEntries(Object.entries(environment).filter(([, value]) => value !== ''));
  const parsed = EnvSchema.safeParse(present);
  const lines = parsed.success
    ? []
    : parsed.error.issues.map((issue) => {
        const name = issue.path.join('.') || '(environment)';
        const expected = issue.code === 'invalid_type' && issue.input === undefined ? 'is required' : issue.message;
        return `${name}: ${expected}`;
      });
  lines.push(...channelGroupIssues(present));
  const compatible = compatibleServers(present);
  lines.push(...compatible.issues);
  if (!parsed.success || lines.length > 0) throw new ConfigError(`invalid configuration: ${lines.join('; ')}`);
  const env = parsed.data;
  const keyed = (apiKey: string | undefined, baseUrl: string | undefined) => (apiKey ? { apiKey, baseUrl } : undefined);
  const openai = keyed(env.OPENAI_API_KEY, env.OPENAI_BASE_URL);
  const anthropic = keyed(env.ANTHROPIC_API_KEY, env.ANTHROPIC_BASE_URL);
  const google = keyed(env.GOOGLE_GENERATIVE_AI_API_KEY, env.GOOGLE_GENERATIVE_AI_BASE_URL);
  const providers: ModelProviders = {
    ...(openai ? { openai } : {}),
    ...(anthropic ? { anthropic } : {}),
    ...(google ? { google } : {}),
    compatible: compatible.servers,
  };
  const models = modelLists(env, providers);
  if (models.issues.length > 0) throw new ConfigError(`invalid configuration: ${models.issues.join('; ')}`);
  const { TWILIO_ACCOUNT_SID: accountSid, TWILIO_AUTH_TOKEN: authToken, TWILIO_WHATSAPP_FROM: whatsappFrom } = env;
  // Checked above: a Twilio token, or a widget secret, is there to derive the other secrets from.
  const secretRoot = authToken ?? env.WIDGET_TOKEN_SECRET ?? '';
  return {
    env: env.NODE_ENV,
    port: env.PORT,
    publicBaseUrl: env.PUBLIC_BASE_URL,
    trustProxy: env.TRUST_PROXY,
    logLevel: env.LOG_LEVEL,
    logIdSecret: env.LOG_ID_SECRET ?? createHmac('sha256', secretRoot).update('log-ids').digest('hex'),
    redisUrl: env.REDIS_URL,
    redisClusterNodes: env.REDIS_CLUSTER_NODES,
    mongodbUri: env.MONGODB_URI,
    twilio: accountSid && authToken && whatsappFrom ? { accountSid, authToken, whatsappFrom, apiBaseUrl: env.TWILIO_API_BASE_URL } : undefined,
    model: {
      providers,
      ...models.lists,
      holdingNoticeMs: env.MODEL_HOLDING_NOTICE_MS,
      breaker: { failures: env.MODEL_BREAKER_FAILURES, cooldownMs: env.MODEL_BREAKER_COOLDOWN_MS },
      maxSteps: env.MODEL_MAX_STEPS,
      maxOutputTokens: env.MODEL_MAX_OUTPUT_TOKENS,
      timeoutMs: env.MODEL_TIMEOUT_MS,
      prices: env.MODEL_PRICES,
    },
    businessName: env.BUSINESS_NAME,
    handoff: { teamsJson: env.HANDOFF_TEAMS, noticeAttempts: env.NOTICE_ATTEMPTS, noticeBackoffMs: env.NOTICE_BACKOFF_MS },
    csat: {
      enabled: env.CSAT_ENABLED,
      afterMs: Math.round(env.CSAT_AFTER_MINUTES * 60_000),
      cooldownMs: Math.round(env.CSAT_COOLDOWN_HOURS * 3_600_000),
      commentMs: Math.round(env.CSAT_COMMENT_MINUTES * 60_000),
    },
    takeover: {
      idleMs: Math.round(env.TAKEOVER_IDLE_MINUTES * 60_000),
      lateReplyContentSid: env.WHATSAPP_LATE_REPLY_CONTENT_SID,
      mediaLinkMs: env.TAKEOVER_MEDIA_LINK_MINUTES * 60_000,
    },
    adminToken: env.ADMIN_TOKEN,
    metrics: { port: env.METRICS_PORT, host: env.METRICS_HOST, token: env.METRICS_TOKEN },
    retention: retentionConfig(env),
    transcriptOutbox: { max: env.TRANSCRIPT_OUTBOX_MAX, batchSize: env.TRANSCRIPT_WRITER_BATCH },
    media: {
      maxBytes: env.MEDIA_MAX_BYTES,
      fetchTimeoutMs: env.MEDIA_FETCH_TIMEOUT_MS,
      transcribeModel: env.MODEL_TRANSCRIBE,
      maxTurnBytes: env.MEDIA_MAX_TURN_BYTES,
      maxWorkerBytes: Math.max(env.MEDIA_MAX_WORKER_BYTES, env.MEDIA_MAX_TURN_BYTES),
      unclaimedTtlMs: Math.round(env.UPLOAD_UNCLAIMED_TTL_MINUTES * 60_000),
    },
    knowledge: knowledgeConfig(env),
    guidance: guidanceConfig(env),
    reports: reportsConfig(env),
    transcriptLinks: {
      secret: env.TRANSCRIPT_LINK_SECRET ?? createHmac('sha256', secretRoot).update('transcript-links').digest('hex'),
      ttlHours: env.TRANSCRIPT_LINK_TTL_HOURS,
    },
    web: {
      sitesJson: env.WEB_SITES,
      // Without its own secret the widget signs with a key derived from the Twilio token, so
      // every process of one deployment agrees without extra configuration.
      tokenSecret: env.WIDGET_TOKEN_SECRET ?? createHmac('sha256', secretRoot).update('widget-tokens').digest('hex'),
      maxMessageChars: env.WEB_MAX_MESSAGE_CHARS,
      visitorMessagesPerMinute: env.WEB_VISITOR_MESSAGES_PER_MINUTE,
      ipMessagesPerMinute: env.WEB_IP_MESSAGES_PER_MINUTE,
      visitorRequestsPerMinute: env.WEB_VISITOR_REQUESTS_PER_MINUTE,
      ipRequestsPerMinute: env.WEB_IP_REQUESTS_PER_MINUTE,
      streamsPerVisitor: env.WEB_STREAMS_PER_VISITOR,
      visitorUploadsPerMinute: env.WEB_VISITOR_UPLOADS_PER_MINUTE,
      ipUploadsPerMinute: env.WEB_IP_UPLOADS_PER_MINUTE,
      identityMaxAgeSeconds: env.WEB_IDENTITY_MAX_AGE_SECONDS,
      identityLegacy: env.WEB_IDENTITY_LEGACY,
      visitorPendingUploads: env.WEB_VISITOR_PENDING_UPLOADS,
      visitorPendingUploadBytes: env.WEB_VISITOR_PENDING_UPLOAD_BYTES,
    },
    mcp: env.MCP_SERVER_URL
      ? {
          url: env.MCP_SERVER_URL,
          authToken: env.MCP_AUTH_TOKEN,
          categoryPrefixes: Object.fromEntries(
            (env.MCP_CATEGORY_PREFIXES ?? '')
              .split(',')
              .filter(Boolean)
              .map((pair) => pair.split('=') as [string, string]),
          ),
          publicCategories: env.MCP_PUBLIC_CATEGORIES.split(','),
          scopeArguments: env.MCP_SCOPE_ARGUMENTS ?? {},
        }
      : undefined,
    actions: {
      enabled: env.ACTIONS_ENABLED === 'true',
      confirmTtlSeconds: env.ACTION_CONFIRM_TTL_SECONDS,
      irreversibleTools: env.ACTION_TOOLS_IRREVERSIBLE.split(',').filter(Boolean),
      teamApprovalTools: env.ACTION_TOOLS_TEAM_APPROVAL.split(',').filter(Boolean),
      handoffTeam: env.ACTION_HANDOFF_TEAM,
    },
    worker: {
      concurrency: env.WORKER_CONCURRENCY,
      lockTtlMs: env.TURN_LOCK_TTL_MS,
      coalesceMs: env.COALESCE_MS,
      channelCoalesceMs: { web: env.COALESCE_MS_WEB ?? env.COALESCE_MS, whatsapp: env.COALESCE_MS_WHATSAPP ?? env.COALESCE_MS },
      shutdownTimeoutMs: env.SHUTDOWN_TIMEOUT_MS,
      retryBudgetMs: env.MESSAGE_RETRY_BUDGET_MS,
      retryBackoffMs: env.MESSAGE_RETRY_BACKOFF_MS,
    },
    offload: { usageFlushIntervalMs: env.USAGE_FLUSH_INTERVAL_MS },
  };
}

/** The password in a connection URL, as written and decoded; none when it has none. */
function urlPassword(url: string): string[] {
  try {
    const password = new URL(url).password;
    return password ? [password, decodeURIComponent(password)] : [];
  } catch {
    return [];
  }
}

const SiteSecretsSchema = z.array(z.looseObject({ identitySecret: z.string().optional() }));

/** Each widget site's identity secret (WEB_SITES is validated in full by the web channel). */
function siteIdentitySecrets(sitesJson: string | undefined): string[] {
  if (!sitesJson) return [];
  try {
    const sites = SiteSecretsSchema.safeParse(JSON.parse(sitesJson));
    return sites.success ? sites.data.flatMap((site) => (site.identitySecret ? [site.identitySecret] : [])) : [];
  } catch {
    return [];
  }
}

/** Every secret value the configuration holds (given or derived): the logger redacts each by value. */
export function configuredSecrets(config: Config): string[] {
  return [
    ...urlPassword(config.redisUrl),
    ...urlPassword(config.mongodbUri),
    config.model.providers.openai?.apiKey,
    config.model.providers.anthropic?.apiKey,
    config.model.providers.google?.apiKey,
    ...Object.values(config.model.providers.compatible).map((server) => server.apiKey),
    config.twilio?.authToken,
    config.mcp?.authToken,
    config.adminToken,
    config.web.tokenSecret,
    config.transcriptLinks.secret,
    config.logIdSecret,
    config.metrics.token,
    ...siteIdentitySecrets(config.web.sitesJson),
  ].filter((secret): secret is string => secret !== undefined);
}
