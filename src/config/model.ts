/**
 * The model providers (a built-in one configured by its key, a named OpenAI-compatible server
 * by its base URL) and the tiers' ordered `provider:model` lists, checked against them.
 */
import { z } from 'zod';
import { httpUrl, jsonText, positiveInt } from './fields.js';

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

export const providerFields = {
  // Model providers: a provider is configured by its key (a compatible server by its base URL).
  OPENAI_API_KEY: z.string().min(1, 'expected an API key for the model endpoint').optional(),
  OPENAI_BASE_URL: httpUrl.optional(),
  ANTHROPIC_API_KEY: z.string().min(1, 'expected an Anthropic API key').optional(),
  ANTHROPIC_BASE_URL: httpUrl.optional(),
  GOOGLE_GENERATIVE_AI_API_KEY: z.string().min(1, 'expected a Google Generative AI API key').optional(),
  GOOGLE_GENERATIVE_AI_BASE_URL: httpUrl.optional(),
};

export const modelFields = {
  // Ordered lists of `provider:model` entries (a bare name is OpenAI's); see `modelList`.
  MODEL_FAST: modelList.default(['gpt-5-mini']),
  MODEL_SMART: modelList.default(['gpt-5']),
  MODEL_VISION: modelList.optional(),
  // The embedding model the knowledge's search fuses with BM25 (one `provider:model`; absent: lexical only).
  MODEL_EMBEDDING: z.string().trim().min(1, 'expected one provider:model entry, e.g. openai:text-embedding-3-small').optional(),
  MODEL_EMBEDDING_DIMENSIONS: z.coerce.number({ error: 'expected 16–4096' }).int().min(16).max(4096).optional(),
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
};

/** One entry of a model list: which configured provider, and its model id. */
export interface ModelSpec {
  provider: string;
  modelId: string;
}

/** The embedding model: its entry, and the vector size asked of it (undefined: the model's own). */
export interface EmbeddingSpec extends ModelSpec {
  dimensions: number | undefined;
}

/** OpenAI's text-embedding-3 models shorten their vectors on request: 512 keeps them compact. */
const DEFAULT_DIMENSIONS = (spec: ModelSpec) => (spec.provider === 'openai' && spec.modelId.startsWith('text-embedding-3') ? 512 : undefined);

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
export function compatibleServers(present: Record<string, unknown>): { servers: ModelProviders['compatible']; issues: string[] } {
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
function modelLists(
  env: {
    MODEL_FAST: readonly string[];
    MODEL_SMART: readonly string[];
    MODEL_VISION?: readonly string[] | undefined;
    MODEL_EMBEDDING?: string | undefined;
    MODEL_EMBEDDING_DIMENSIONS?: number | undefined;
  },
  providers: ModelProviders,
): { lists: Record<'fast' | 'smart' | 'vision', ModelSpec[]> & { embedding: EmbeddingSpec | undefined }; issues: string[] } {
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
  const [embedding] = parse('MODEL_EMBEDDING', env.MODEL_EMBEDDING ? [env.MODEL_EMBEDDING] : []);
  if (embedding?.provider === 'anthropic') issues.push(`MODEL_EMBEDDING: "${env.MODEL_EMBEDDING}": Anthropic offers no embedding model`);
  return {
    lists: {
      fast: parse('MODEL_FAST', env.MODEL_FAST),
      smart: parse('MODEL_SMART', env.MODEL_SMART),
      vision: parse('MODEL_VISION', env.MODEL_VISION ?? []),
      embedding: embedding ? { ...embedding, dimensions: env.MODEL_EMBEDDING_DIMENSIONS ?? DEFAULT_DIMENSIONS(embedding) } : undefined,
    },
    issues,
  };
}

export interface ModelConfig {
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
}

type ModelEnv = z.infer<z.ZodObject<typeof providerFields & typeof modelFields>>;

/** The providers with a key, the compatible servers, the tiers' lists checked against them, and the call limits. */
export function modelConfig(env: ModelEnv, compatible: ModelProviders['compatible']): { model: ModelConfig; issues: string[] } {
  const keyed = (apiKey: string | undefined, baseUrl: string | undefined) => (apiKey ? { apiKey, baseUrl } : undefined);
  const openai = keyed(env.OPENAI_API_KEY, env.OPENAI_BASE_URL);
  const anthropic = keyed(env.ANTHROPIC_API_KEY, env.ANTHROPIC_BASE_URL);
  const google = keyed(env.GOOGLE_GENERATIVE_AI_API_KEY, env.GOOGLE_GENERATIVE_AI_BASE_URL);
  const providers: ModelProviders = { ...(openai ? { openai } : {}), ...(anthropic ? { anthropic } : {}), ...(google ? { google } : {}), compatible };
  const models = modelLists(env, providers);
  const model: ModelConfig = {
    providers,
    ...models.lists,
    holdingNoticeMs: env.MODEL_HOLDING_NOTICE_MS,
    breaker: { failures: env.MODEL_BREAKER_FAILURES, cooldownMs: env.MODEL_BREAKER_COOLDOWN_MS },
    maxSteps: env.MODEL_MAX_STEPS,
    maxOutputTokens: env.MODEL_MAX_OUTPUT_TOKENS,
    timeoutMs: env.MODEL_TIMEOUT_MS,
    prices: env.MODEL_PRICES,
  };
  return { model, issues: models.issues };
}
