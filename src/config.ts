/**
 * The environment, parsed once at start-up by one zod schema. A missing or invalid variable
 * stops the process with one line naming it and what it expects. Nothing else in the service
 * reads `process.env`.
 */
import { createHmac } from 'node:crypto';
import { isIP } from 'node:net';
import { z } from 'zod';
import { ConfigError } from './errors/index.js';

const positiveInt = (fallback: number) => z.coerce.number({ error: 'expected a positive integer' }).int().positive().default(fallback);

const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An address, a CIDR subnet, or one of Express's names for address ranges. */
function isProxyRange(value: string): boolean {
  if (PROXY_RANGE_NAMES.has(value)) return true;
  const [address = '', prefix, ...rest] = value.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128));
}

/**
 * Which proxies' X-Forwarded-* headers to believe, as Express's `trust proxy` takes it: none,
 * a hop count, or the proxies' addresses. `true` means one hop (the nearest proxy), never
 * "trust every hop", which would take the client-written leftmost X-Forwarded-For as its IP.
 */
const trustProxySetting = z.string().transform((raw, context): TrustProxy => {
  const value = raw.trim().toLowerCase();
  if (['false', 'no', '0'].includes(value)) return false;
  if (['true', 'yes'].includes(value)) return 1;
  if (/^\d{1,2}$/.test(value)) return Number(value);
  const ranges = value.split(',').map((item) => item.trim());
  if (ranges.every(isProxyRange)) return ranges;
  context.addIssue({
    code: 'custom',
    message: 'expected false, a hop count (true means 1), or a comma-separated list of proxy addresses or subnets, e.g. 10.0.0.0/8,loopback',
  });
  return z.NEVER;
});

/** `false`, the number of proxy hops in front of the service, or the proxies' addresses and subnets. */
export type TrustProxy = false | number | string[];

const httpUrl = z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' }).transform((value) => value.replace(/\/+$/, ''));

/** A variable holding JSON: parsed here, so the schema piped after it sees the value. */
const jsonText = () =>
  z.string().transform((text, context) => {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      context.addIssue({ code: 'custom', message: 'expected JSON' });
      return z.NEVER;
    }
  });

/** One `provider:model` entry as written; which provider a prefix names is decided against the configured ones. */
const modelList = z
  .string()
  .transform((value) =>
    value
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean),
  )
  .pipe(z.array(z.string()).min(1, 'expected a comma-separated list of provider:model entries, e.g. anthropic:claude-sonnet-4-5,openai:gpt-5'));

/** `OPENAI_COMPATIBLE_<NAME>_BASE_URL` / `_API_KEY`: a named OpenAI-compatible server (Ollama, vLLM, Groq…). */
const COMPATIBLE_VARIABLE = /^OPENAI_COMPATIBLE_([A-Z0-9_]+?)_(BASE_URL|API_KEY)$/;
const BUILT_IN_PROVIDERS = ['openai', 'anthropic', 'google'] as const;

const CompatibleSchema = z.object({ BASE_URL: httpUrl, API_KEY: z.string().min(1).optional() });

// Knowledge (issue 38): the business's help pages, documents and FAQ (src/knowledge/). One
// block: its variables (spread into EnvSchema), its slice of Config and how it is built.
const knowledgeUrl = z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' });
/** One website to crawl, as KNOWLEDGE_SOURCES and `POST /admin/knowledge/sources` take it. */
export const KnowledgeSourceSchema = z.strictObject({
  url: knowledgeUrl,
  sitemap: knowledgeUrl.optional(),
  include: z.array(z.string().min(1).max(200)).max(50).optional(),
  exclude: z.array(z.string().min(1).max(200)).max(50).optional(),
  /** Widget site keys and/or channel ids (`whatsapp`) answered from it; absent: everyone. */
  sites: z.array(z.string().trim().min(1).max(80)).max(20).optional(),
  language: z.string().trim().min(2).max(10).optional(),
});
const KNOWLEDGE_ENV = {
  KNOWLEDGE_SOURCES: jsonText()
    .pipe(
      z
        .array(KnowledgeSourceSchema, { error: 'expected a JSON list of {"url": "https://…", "sitemap"?, "include"?, "exclude"?, "sites"?, "language"?}' })
        .max(50),
    )
    .optional(),
  KNOWLEDGE_RECRAWL_HOURS: positiveInt(24),
  KNOWLEDGE_MAX_PAGES: positiveInt(500),
  KNOWLEDGE_MAX_DEPTH: z.coerce.number({ error: 'expected 0–20' }).int().min(0).max(20).default(5),
  KNOWLEDGE_MAX_PAGE_BYTES: positiveInt(5 * 1024 * 1024),
  KNOWLEDGE_MAX_CRAWL_BYTES: positiveInt(200 * 1024 * 1024),
  KNOWLEDGE_FETCH_TIMEOUT_MS: positiveInt(15_000),
  KNOWLEDGE_MAX_DOCUMENT_BYTES: positiveInt(10 * 1024 * 1024),
  KNOWLEDGE_MAX_PASSAGES: z.coerce.number({ error: 'expected 1–5' }).int().min(1).max(5).default(5),
  KNOWLEDGE_MAX_PASSAGE_TOKENS: positiveInt(1500),
};
export interface KnowledgeConfig {
  sources: z.infer<typeof KnowledgeSourceSchema>[];
  recrawlHours: number;
  crawl: { maxPages: number; maxDepth: number; maxPageBytes: number; maxCrawlBytes: number; timeoutMs: number };
  maxDocumentBytes: number;
  maxPassages: number;
  maxPassageTokens: number;
}
function knowledgeConfig(env: Env): KnowledgeConfig {
  return {
    sources: env.KNOWLEDGE_SOURCES ?? [],
    recrawlHours: env.KNOWLEDGE_RECRAWL_HOURS,
    crawl: {
      maxPages: env.KNOWLEDGE_MAX_PAGES,
      maxDepth: env.KNOWLEDGE_MAX_DEPTH,
      maxPageBytes: env.KNOWLEDGE_MAX_PAGE_BYTES,
      maxCrawlBytes: env.KNOWLEDGE_MAX_CRAWL_BYTES,
      timeoutMs: env.KNOWLEDGE_FETCH_TIMEOUT_MS,
    },
    maxDocumentBytes: env.KNOWLEDGE_MAX_DOCUMENT_BYTES,
    maxPassages: env.KNOWLEDGE_MAX_PASSAGES,
    maxPassageTokens: env.KNOWLEDGE_MAX_PASSAGE_TOKENS,
  };
}
// End of Knowledge.

export const EnvSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce.number({ error: 'expected a port number' }).int().min(0).max(65535).default(3000),
  PUBLIC_BASE_URL: httpUrl.describe('the public URL Twilio calls, e.g. https://assistant.example.com'),
  TRUST_PROXY: trustProxySetting.default(false),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),

  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'expected a redis:// or rediss:// URL')
    .default('redis://127.0.0.1:6379'),
  // Set: a Redis Cluster from these seed nodes (REDIS_URL then gives only credentials and TLS).
  REDIS_CLUSTER_NODES: z
    .string()
    .regex(/^\s*[^\s:,]+:\d{1,5}\s*(,\s*[^\s:,]+:\d{1,5}\s*)*$/, 'expected comma-separated host:port seed nodes, e.g. 10.0.0.1:6379,10.0.0.2:6379')
    .transform((value) =>
      value.split(',').map((node) => {
        const [host = '', port] = node.trim().split(':');
        return { host, port: Number(port) };
      }),
    )
    .optional(),
  MONGODB_URI: z
    .string()
    .regex(/^mongodb(\+srv)?:\/\//, 'expected a mongodb:// or mongodb+srv:// URI')
    .default('mongodb://127.0.0.1:27017/wa-assistant'),

  // WhatsApp is on with all three, off with none (a widget-only site); see `whatsappGroupIssues`.
  TWILIO_ACCOUNT_SID: z
    .string()
    .regex(/^AC[0-9a-fA-F]{32}$/, 'expected an Account SID: AC followed by 32 hex digits')
    .optional(),
  TWILIO_AUTH_TOKEN: z.string().min(16, 'expected the account auth token (32 characters)').optional(),
  TWILIO_WHATSAPP_FROM: z
    .string()
    .regex(/^whatsapp:\+[1-9]\d{6,14}$/, 'expected the WhatsApp sender as whatsapp:+<E.164 number>')
    .optional(),
  TWILIO_API_BASE_URL: httpUrl.optional(),

  // Model providers: a provider is configured by its key (a compatible server by its base URL).
  OPENAI_API_KEY: z.string().min(1, 'expected an API key for the model endpoint').optional(),
  OPENAI_BASE_URL: httpUrl.optional(),
  ANTHROPIC_API_KEY: z.string().min(1, 'expected an Anthropic API key').optional(),
  ANTHROPIC_BASE_URL: httpUrl.optional(),
  GOOGLE_GENERATIVE_AI_API_KEY: z.string().min(1, 'expected a Google Generative AI API key').optional(),
  GOOGLE_GENERATIVE_AI_BASE_URL: httpUrl.optional(),
  MCP_SERVER_URL: httpUrl.optional(),
  MCP_AUTH_TOKEN: z.string().min(1).optional(),
  MCP_CATEGORY_PREFIXES: z
    .string()
    .regex(/^([a-z0-9_]+=[a-z0-9_]+)(,[a-z0-9_]+=[a-z0-9_]+)*$/i, 'expected prefix=category pairs, e.g. invoice_=invoice,plan_=catalog')
    .optional(),
  MCP_PUBLIC_CATEGORIES: z
    .string()
    .regex(/^[a-z0-9_]+(,[a-z0-9_]+)*$/i, 'expected comma-separated categories, e.g. catalog,knowledge')
    .default('catalog,knowledge,help,pricing'),
  MCP_SCOPE_ARGUMENTS: jsonText()
    .pipe(
      z.record(z.string().min(1), z.record(z.string().min(1), z.enum(['customer', 'entity'])), {
        error: 'expected JSON {"<tool>": {"<argument>": "customer" | "entity"}}',
      }),
    )
    .optional(),
  // Confirmed actions (src/actions/): the MCP server's scoped writes, each run only on the customer's confirmation.
  ACTIONS_ENABLED: z.enum(['true', 'false'], { error: 'expected true or false' }).default('true'),
  ACTION_CONFIRM_TTL_SECONDS: positiveInt(600),
  ACTION_TOOLS_IRREVERSIBLE: z
    .string()
    .regex(/^([a-z0-9_.-]+(,[a-z0-9_.-]+)*)?$/i, 'expected comma-separated tool names, e.g. refund_create')
    .default(''),
  // Writes a teammate must approve (reversible or irreversible): handed to the team, never confirmed by the customer; wins over ACTION_TOOLS_IRREVERSIBLE.
  ACTION_TOOLS_TEAM_APPROVAL: z
    .string()
    .regex(/^([a-z0-9_.-]+(,[a-z0-9_.-]+)*)?$/i, 'expected comma-separated tool names, e.g. order_cancel')
    .default(''),
  ACTION_HANDOFF_TEAM: z.enum(['support', 'sales'], { error: 'expected support or sales' }).default('support'),
  WEB_SITES: z.string().optional(),
  WIDGET_TOKEN_SECRET: z.string().min(32, 'expected at least 32 characters').optional(),
  WEB_MAX_MESSAGE_CHARS: positiveInt(2000),
  WEB_VISITOR_MESSAGES_PER_MINUTE: positiveInt(20),
  WEB_IP_MESSAGES_PER_MINUTE: positiveInt(60),
  WEB_VISITOR_REQUESTS_PER_MINUTE: positiveInt(60),
  WEB_IP_REQUESTS_PER_MINUTE: positiveInt(300),
  WEB_STREAMS_PER_VISITOR: positiveInt(5),
  WEB_VISITOR_UPLOADS_PER_MINUTE: positiveInt(10),
  WEB_IP_UPLOADS_PER_MINUTE: positiveInt(30),
  // How long a site's signed identity (data-user-hash with data-user-ts) is accepted after its issue time.
  WEB_IDENTITY_MAX_AGE_SECONDS: positiveInt(3600).pipe(z.number().max(7 * 24 * 60 * 60, 'expected at most 604800 (7 days)')),
  // Whether a data-user-hash without data-user-ts (the form before issue times: it never expires) is accepted.
  WEB_IDENTITY_LEGACY: z.stringbool({ error: 'expected true or false' }).default(false),
  // A visitor's uploads no message has named yet: at most this many, and this many bytes together.
  WEB_VISITOR_PENDING_UPLOADS: positiveInt(10),
  WEB_VISITOR_PENDING_UPLOAD_BYTES: positiveInt(96 * 1024 * 1024),
  // An upload no message named within this long is deleted (decimals allowed).
  UPLOAD_UNCLAIMED_TTL_MINUTES: z.coerce
    .number({ error: 'expected a number of minutes' })
    .positive()
    .max(24 * 60)
    .default(30),
  BUSINESS_NAME: z.string().min(1).max(80).default('our business'),
  HANDOFF_TEAMS: z.string().optional(),
  NOTICE_ATTEMPTS: positiveInt(6),
  NOTICE_BACKOFF_MS: positiveInt(5000),
  // Takeover: a takeover with no teammate message for this long hands back by itself (decimals allowed).
  TAKEOVER_IDLE_MINUTES: z.coerce
    .number({ error: 'expected a number of minutes' })
    .positive()
    .max(7 * 24 * 60)
    .default(30),
  // How long the signed link to a customer's photo, PDF or voice note relayed to a teammate's WhatsApp works (Twilio fetches it at once).
  TAKEOVER_MEDIA_LINK_MINUTES: z.coerce
    .number({ error: 'expected a number of minutes' })
    .int()
    .min(5)
    .max(7 * 24 * 60)
    .default(60),
  // Approved template (Twilio Content SID, one variable: the reply) for the assistant's replies outside WhatsApp's 24-hour window.
  WHATSAPP_LATE_REPLY_CONTENT_SID: z
    .string()
    .regex(/^HX[0-9a-fA-F]{32}$/, 'expected a Content SID: HX followed by 32 hex digits')
    .optional(),
  ADMIN_TOKEN: z.string().min(24, 'expected at least 24 characters').optional(),
  METRICS_PORT: z.coerce.number({ error: 'expected a port number' }).int().min(0).max(65535).optional(),
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  METRICS_TOKEN: z.string().min(24, 'expected at least 24 characters').optional(),
  TRANSCRIPT_LINK_SECRET: z.string().min(32, 'expected at least 32 characters').optional(),
  TRANSCRIPT_LINK_TTL_HOURS: positiveInt(72),
  TRANSCRIPT_RETENTION_DAYS: positiveInt(365),
  // Ordered lists of `provider:model` entries (a bare name is OpenAI's); see `modelList`.
  MODEL_FAST: modelList.default(['gpt-5-mini']),
  MODEL_SMART: modelList.default(['gpt-5']),
  MODEL_VISION: modelList.optional(),
  // A customer waiting this long on a model outage gets one holding message (then the real answer).
  MODEL_HOLDING_NOTICE_MS: positiveInt(20_000),
  // A provider failing this many calls in a row (across workers) is skipped for the cooldown, then probed.
  MODEL_BREAKER_FAILURES: positiveInt(3),
  MODEL_BREAKER_COOLDOWN_MS: positiveInt(30_000),
  MODEL_MAX_STEPS: positiveInt(5),
  MODEL_MAX_OUTPUT_TOKENS: positiveInt(1024),
  MODEL_TIMEOUT_MS: positiveInt(45_000),
  MODEL_PRICES: jsonText()
    .pipe(
      z.record(z.string().min(1), z.strictObject({ inputPerMTok: z.number().nonnegative(), outputPerMTok: z.number().nonnegative() }), {
        error: 'expected JSON {"<model>": {"inputPerMTok": <price>, "outputPerMTok": <price>}}',
      }),
    )
    .optional(),

  // Customers' media (issue 13): fetched by the worker, stored in GridFS, voice notes transcribed.
  MEDIA_MAX_BYTES: positiveInt(16 * 1024 * 1024),
  MEDIA_FETCH_TIMEOUT_MS: positiveInt(15_000),
  // Media bytes one turn sends the model (after images are downscaled), and all turns of one worker process at once.
  MEDIA_MAX_TURN_BYTES: positiveInt(24 * 1024 * 1024),
  MEDIA_MAX_WORKER_BYTES: positiveInt(48 * 1024 * 1024),
  MODEL_TRANSCRIBE: z.string().min(1).default('gpt-4o-mini-transcribe'),

  WORKER_CONCURRENCY: positiveInt(32),
  // Turns and recovery: a killed worker's conversation is taken over within about 1⅓ TTL (the
  // lock and BullMQ's job lock share it). A message's turn starts at once; COALESCE_MS is the
  // quiet period that ends a burst (a turn started over for a message arriving before its reply
  // left waits until the newest message is that old, and a WhatsApp reply is held until then; a
  // widget visitor's typing report stands that long). Per channel: COALESCE_MS_WEB and
  // COALESCE_MS_WHATSAPP, each falling back to COALESCE_MS (0: one turn per message).
  TURN_LOCK_TTL_MS: z.coerce
    .number({ error: 'expected 1500–60000 ms' })
    .int()
    .min(1500, 'expected 1500–60000 ms')
    .max(60_000, 'expected 1500–60000 ms')
    .default(5_000),
  COALESCE_MS: z.coerce.number({ error: 'expected 0–10000 ms' }).int().min(0, 'expected 0–10000 ms').max(10_000, 'expected 0–10000 ms').default(1_500),
  COALESCE_MS_WEB: z.coerce.number({ error: 'expected 0–10000 ms' }).int().min(0, 'expected 0–10000 ms').max(10_000, 'expected 0–10000 ms').optional(),
  COALESCE_MS_WHATSAPP: z.coerce.number({ error: 'expected 0–10000 ms' }).int().min(0, 'expected 0–10000 ms').max(10_000, 'expected 0–10000 ms').optional(),
  // Longer than one model call, so a SIGTERM lets an in-flight turn finish.
  SHUTDOWN_TIMEOUT_MS: positiveInt(50_000),
  // A message is given up on (apology, recorded failed, counted) only once its conversation's budget is spent.
  MESSAGE_RETRY_BUDGET_MS: positiveInt(600_000),
  MESSAGE_RETRY_BACKOFF_MS: positiveInt(2_000),

  // The transcript outbox (Redis → MongoDB): new inbound is refused (503) at this many entries; records per writer batch.
  TRANSCRIPT_OUTBOX_MAX: positiveInt(200_000),
  TRANSCRIPT_WRITER_BATCH: positiveInt(200),

  // Off the per-turn MongoDB path: model usage is counted in Redis and written to MongoDB this often.
  // CONTACT_CACHE_TTL_SECONDS is no longer used (the caller index in Redis never expires); still
  // accepted so a deployment that sets it keeps starting.
  CONTACT_CACHE_TTL_SECONDS: positiveInt(300),
  USAGE_FLUSH_INTERVAL_MS: positiveInt(10_000),
  ...KNOWLEDGE_ENV,
});

export type Env = z.infer<typeof EnvSchema>;

/** One entry of a model list: which configured provider, and its model id. */
export interface ModelSpec {
  provider: string;
  modelId: string;
}

export interface ModelProviders {
  openai?: { apiKey: string; baseUrl: string | undefined };
  anthropic?: { apiKey: string; baseUrl: string | undefined };
  google?: { apiKey: string; baseUrl: string | undefined };
  /** Named OpenAI-compatible servers: provider id (the lower-cased NAME) → base URL and optional key. */
  compatible: Record<string, { baseUrl: string; apiKey: string | undefined }>;
}

/** The variable that configures each built-in provider (what the refusal names). */
const PROVIDER_KEY_VARIABLE: Record<(typeof BUILT_IN_PROVIDERS)[number], string> = {
  openai: 'OPENAI_API_KEY',
  anthropic: 'ANTHROPIC_API_KEY',
  google: 'GOOGLE_GENERATIVE_AI_API_KEY',
};

/** The named compatible servers in the environment, or the lines saying what is wrong with them. */
function compatibleServers(present: Record<string, unknown>): { servers: ModelProviders['compatible']; issues: string[] } {
  const grouped: Record<string, Record<string, unknown>> = {};
  for (const [name, value] of Object.entries(present)) {
    const match = COMPATIBLE_VARIABLE.exec(name);
    if (match) (grouped[match[1] ?? ''] ??= {})[match[2] ?? ''] = value;
  }
  const servers: ModelProviders['compatible'] = {};
  const issues: string[] = [];
  for (const [name, variables] of Object.entries(grouped)) {
    const id = name.toLowerCase().replaceAll('_', '-');
    if ((BUILT_IN_PROVIDERS as readonly string[]).includes(id)) {
      issues.push(`OPENAI_COMPATIBLE_${name}_BASE_URL: "${id}" is a built-in provider's name; pick another`);
      continue;
    }
    const parsed = CompatibleSchema.safeParse(variables);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        const field = `OPENAI_COMPATIBLE_${name}_${issue.path.join('.')}`;
        issues.push(`${field}: ${issue.code === 'invalid_type' && issue.input === undefined ? 'is required' : issue.message}`);
      }
      continue;
    }
    servers[id] = { baseUrl: parsed.data.BASE_URL, apiKey: parsed.data.API_KEY };
  }
  return { servers, issues };
}

/**
 * An entry's provider and model: `provider:model` when the prefix names a provider this
 * deployment knows (a model id may hold colons itself, e.g. Ollama's `llama3.1:8b`), else the
 * whole entry is an OpenAI model name (`gpt-5-mini`, as before lists).
 */
function modelSpec(entry: string, compatible: ModelProviders['compatible']): ModelSpec {
  const colon = entry.indexOf(':');
  const prefix = colon > 0 ? entry.slice(0, colon) : '';
  if ((BUILT_IN_PROVIDERS as readonly string[]).includes(prefix) || prefix in compatible) return { provider: prefix, modelId: entry.slice(colon + 1) };
  return { provider: 'openai', modelId: entry };
}

/** The configured entries of each list, or one line per entry whose provider has no key. */
function modelLists(env: Env, providers: ModelProviders): { lists: Record<'fast' | 'smart' | 'vision', ModelSpec[]>; issues: string[] } {
  const issues: string[] = [];
  const parse = (variable: string, entries: readonly string[]) =>
    entries.map((entry) => {
      const spec = modelSpec(entry, providers.compatible);
      if (spec.provider in providers.compatible) return spec;
      const provider = spec.provider as (typeof BUILT_IN_PROVIDERS)[number];
      if (!providers[provider]) issues.push(`${variable}: "${entry}" names provider ${provider}, which has no key (set ${PROVIDER_KEY_VARIABLE[provider]})`);
      if (!spec.modelId) issues.push(`${variable}: "${entry}" names no model`);
      return spec;
    });
  return {
    lists: { fast: parse('MODEL_FAST', env.MODEL_FAST), smart: parse('MODEL_SMART', env.MODEL_SMART), vision: parse('MODEL_VISION', env.MODEL_VISION ?? []) },
    issues,
  };
}

export interface Config {
  env: Env['NODE_ENV'];
  port: number;
  publicBaseUrl: string;
  trustProxy: TrustProxy;
  logLevel: Env['LOG_LEVEL'];
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
  /** Human takeover: the idle hand-back and the assistant's late-reply template. */
  takeover: { idleMs: number; lateReplyContentSid: string | undefined; mediaLinkMs: number };
  adminToken: string | undefined;
  /** /metrics: on its own listener when `port` is set, else on the service port only with `token`. */
  metrics: { port: number | undefined; host: string; token: string | undefined };
  transcriptLinks: { secret: string; ttlHours: number };
  retentionDays: number;
  transcriptOutbox: { max: number; batchSize: number };
  /**
   * Customers' media: the cap per file (download and upload), the fetch deadline, the transcription
   * model, the media bytes per turn and per worker process sent to the model, and how long an
   * upload no message named is kept.
   */
  media: { maxBytes: number; fetchTimeoutMs: number; transcribeModel: string; maxTurnBytes: number; maxWorkerBytes: number; unclaimedTtlMs: number };
  knowledge: KnowledgeConfig;
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

const TWILIO_GROUP = ['TWILIO_ACCOUNT_SID', 'TWILIO_AUTH_TOKEN', 'TWILIO_WHATSAPP_FROM'] as const;

/**
 * The variables that go together: WhatsApp needs all three TWILIO_* (a partial set names what is
 * missing), and without a Twilio token to derive them from, the widget needs its own secret.
 */
function channelGroupIssues(present: Record<string, unknown>): string[] {
  const given = TWILIO_GROUP.filter((name) => present[name] !== undefined);
  if (given.length === TWILIO_GROUP.length) return [];
  if (given.length > 0) {
    return TWILIO_GROUP.filter((name) => present[name] === undefined).map(
      (name) => `${name}: is required with ${given.join(' and ')} (WhatsApp needs all three TWILIO_* variables; set none to run the widget alone)`,
    );
  }
  return present.WIDGET_TOKEN_SECRET === undefined
    ? ['WIDGET_TOKEN_SECRET: is required without TWILIO_AUTH_TOKEN to derive it from (at least 32 random characters, e.g. openssl rand -hex 32)']
    : [];
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
    takeover: {
      idleMs: Math.round(env.TAKEOVER_IDLE_MINUTES * 60_000),
      lateReplyContentSid: env.WHATSAPP_LATE_REPLY_CONTENT_SID,
      mediaLinkMs: env.TAKEOVER_MEDIA_LINK_MINUTES * 60_000,
    },
    adminToken: env.ADMIN_TOKEN,
    metrics: { port: env.METRICS_PORT, host: env.METRICS_HOST, token: env.METRICS_TOKEN },
    retentionDays: env.TRANSCRIPT_RETENTION_DAYS,
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
    config.metrics.token,
    ...siteIdentitySecrets(config.web.sitesJson),
  ].filter((secret): secret is string => secret !== undefined);
}
