/**
 * The environment, parsed once at start-up by one zod schema. A missing or invalid variable
 * stops the process with one line naming it and what it expects. Nothing else in the service
 * reads `process.env`. The schema's fields, and the config each section builds from them, are
 * written in sections under src/config/ (one per part of the service); this module puts them
 * together, in the order their issues are reported.
 */
import { z } from 'zod';
import { ConfigError } from './errors/index.js';
import { csatFields } from './config/csat.js';
import { guidanceConfig, guidanceFields, type GuidanceConfig } from './config/guidance.js';
import { handoffFields } from './config/handoff.js';
import { knowledgeConfig, knowledgeFields, type KnowledgeConfig } from './config/knowledge.js';
import { mediaConfig, mediaFields, type MediaConfig } from './config/media.js';
import { actionFields, actionsConfig, mcpConfig, mcpFields, type ActionsConfig, type McpConfig } from './config/mcp.js';
import { compatibleServers, modelConfig, modelFields, providerFields, type ModelConfig, type ModelProviders } from './config/model.js';
import { queueFields, workerConfig, type WorkerConfig } from './config/queue.js';
import { reportsConfig, reportsFields, type ReportsConfig } from './config/reports.js';
import { retentionConfig, retentionFields, type RetentionDays } from './config/retention.js';
import { derivedSecret, siteIdentitySecrets, urlPassword } from './config/secrets.js';
import { businessFields, operatorFields, serviceFields, type TrustProxy } from './config/service.js';
import { outboxFields, storeFields, transcriptFields } from './config/store.js';
import { webConfig, webFields, type WebConfig } from './config/web.js';
import { channelGroupIssues, whatsappFields } from './config/whatsapp.js';

export type { ModelSpec } from './config/model.js';
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
  model: ModelConfig;
  worker: WorkerConfig;
  /** The usage flush period (see USAGE_FLUSH_INTERVAL_MS). */
  offload: { usageFlushIntervalMs: number };
  mcp: McpConfig | undefined;
  actions: ActionsConfig;
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
  media: MediaConfig;
  knowledge: KnowledgeConfig;
  /** The business's guidance: its budgets and check period. */
  guidance: GuidanceConfig;
  reports: ReportsConfig;
  web: WebConfig;
}

/** The environment parsed, or a ConfigError whose message is one line per bad variable. */
function parseEnvironment(environment: NodeJS.ProcessEnv): { env: Env; compatible: ModelProviders['compatible'] } {
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
  return { env: parsed.data, compatible: compatible.servers };
}

/** Parses the environment; throws a ConfigError whose message is one line per bad variable. */
export function loadConfig(environment: NodeJS.ProcessEnv = process.env): Config {
  const { env, compatible } = parseEnvironment(environment);
  const { model, issues } = modelConfig(env, compatible);
  if (issues.length > 0) throw new ConfigError(`invalid configuration: ${issues.join('; ')}`);
  const { TWILIO_ACCOUNT_SID: accountSid, TWILIO_AUTH_TOKEN: authToken, TWILIO_WHATSAPP_FROM: whatsappFrom } = env;
  // Checked above: a Twilio token, or a widget secret, is there to derive the other secrets from.
  const secretRoot = authToken ?? env.WIDGET_TOKEN_SECRET ?? '';
  return {
    env: env.NODE_ENV,
    port: env.PORT,
    publicBaseUrl: env.PUBLIC_BASE_URL,
    trustProxy: env.TRUST_PROXY,
    logLevel: env.LOG_LEVEL,
    logIdSecret: env.LOG_ID_SECRET ?? derivedSecret(secretRoot, 'log-ids'),
    redisUrl: env.REDIS_URL,
    redisClusterNodes: env.REDIS_CLUSTER_NODES,
    mongodbUri: env.MONGODB_URI,
    twilio: accountSid && authToken && whatsappFrom ? { accountSid, authToken, whatsappFrom, apiBaseUrl: env.TWILIO_API_BASE_URL } : undefined,
    model,
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
    media: mediaConfig(env),
    knowledge: knowledgeConfig(env),
    guidance: guidanceConfig(env),
    reports: reportsConfig(env),
    transcriptLinks: { secret: env.TRANSCRIPT_LINK_SECRET ?? derivedSecret(secretRoot, 'transcript-links'), ttlHours: env.TRANSCRIPT_LINK_TTL_HOURS },
    // Without its own secret the widget signs with a key derived from the Twilio token.
    web: webConfig(env, derivedSecret(secretRoot, 'widget-tokens')),
    mcp: mcpConfig(env),
    actions: actionsConfig(env),
    worker: workerConfig(env),
    offload: { usageFlushIntervalMs: env.USAGE_FLUSH_INTERVAL_MS },
  };
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
