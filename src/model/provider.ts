/**
 * Model access. Production builds every tier from configuration only: each of MODEL_FAST,
 * MODEL_SMART and MODEL_VISION is an ordered list of `provider:model` entries, resolved through
 * the AI SDK's provider registry over the providers that have a key — `@ai-sdk/openai` (the
 * Responses API, or Chat Completions when OPENAI_BASE_URL points at a compatible server),
 * `@ai-sdk/anthropic`, `@ai-sdk/google`, and `@ai-sdk/openai-compatible` for each named
 * OPENAI_COMPATIBLE_<NAME>_BASE_URL. Start-up (`loadConfig`) already refused an entry whose
 * provider has no key; nothing here touches the network. There is no configuration that selects
 * a test model: tests hand their deterministic model to `createServices` in code, which no
 * environment variable can reach.
 */
import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { createProviderRegistry, customProvider, type EmbeddingModel, type LanguageModel } from 'ai';
import type { Config, ModelSpec } from '../config.js';
import type { ModelCallUsage, ModelTier } from '../contracts/index.js';

export type { ModelTier };

/**
 * Every AI SDK call runs with its telemetry off: nothing here subscribes to it, and left on, each
 * call builds redacted copies of its events for Node's tracing channel whether or not anyone
 * listens (about 5% of the worker's CPU in the bench's profile).
 */
export const MODEL_TELEMETRY = { isEnabled: false } as const;

/** A tier's list: the two reply tiers, and the models that describe a photo for a text-only one. */
export type ModelChain = ModelCallUsage['tier'];

/** One entry of a tier's list, ready to call. */
export interface ModelEntry {
  /** The provider id (`openai`, `anthropic`, `google`, a compatible server's name): what the circuit breaker counts by. */
  provider: string;
  /** The model as metered and priced: its id for OpenAI (as before lists), `provider:model` otherwise. */
  label: string;
  model: LanguageModel;
  /** Takes image (and PDF) file parts; a text-only entry gets a MODEL_VISION description instead. */
  acceptsFiles: boolean;
}

export interface ModelProvider {
  /** The chain's entries in priority order (vision: possibly empty). */
  entries(chain: ModelChain): readonly ModelEntry[];
}

/** Providers whose chat models all take images and PDFs; a compatible server's model only when MODEL_VISION lists it. */
const FILE_INPUT_PROVIDERS = new Set(['openai', 'anthropic', 'google']);

const specKey = (spec: ModelSpec) => `${spec.provider}:${spec.modelId}`;

/** What the registry and MODEL_EMBEDDING's model are built from (the knowledge feature is handed this much). */
export type EmbeddingModelConfig = Pick<Config['model'], 'providers' | 'fast' | 'smart' | 'vision' | 'embedding'>;

/** The AI SDK provider registry over every configured provider (the only place that names provider packages). */
function createRegistry(config: EmbeddingModelConfig) {
  const { openai, anthropic, google, compatible } = config.providers;
  const providers: Record<string, Parameters<typeof createProviderRegistry>[0][string]> = {};
  if (openai) {
    const provider = createOpenAI({ apiKey: openai.apiKey, ...(openai.baseUrl ? { baseURL: openai.baseUrl } : {}) });
    // A compatible server behind OPENAI_BASE_URL speaks Chat Completions, not the Responses API.
    const openaiIds = [...config.fast, ...config.smart, ...config.vision].filter((spec) => spec.provider === 'openai').map((spec) => spec.modelId);
    providers.openai = openai.baseUrl
      ? customProvider({ languageModels: Object.fromEntries(openaiIds.map((id) => [id, provider.chat(id)])), fallbackProvider: provider })
      : provider;
  }
  if (anthropic) providers.anthropic = createAnthropic({ apiKey: anthropic.apiKey, ...(anthropic.baseUrl ? { baseURL: anthropic.baseUrl } : {}) });
  if (google) providers.google = createGoogleGenerativeAI({ apiKey: google.apiKey, ...(google.baseUrl ? { baseURL: google.baseUrl } : {}) });
  for (const [name, server] of Object.entries(compatible)) {
    providers[name] = createOpenAICompatible({
      name,
      baseURL: server.baseUrl,
      ...(server.apiKey ? { apiKey: server.apiKey } : {}),
      includeUsage: true,
      supportsStructuredOutputs: true,
    });
  }
  return createProviderRegistry(providers);
}

export function createConfiguredModelProvider(config: Config['model']): ModelProvider {
  const registry = createRegistry(config);
  const seeing = new Set(config.vision.map(specKey));
  const entry = (spec: ModelSpec): ModelEntry => ({
    provider: spec.provider,
    label: spec.provider === 'openai' ? spec.modelId : specKey(spec),
    model: registry.languageModel(specKey(spec) as `${string}:${string}`),
    acceptsFiles: FILE_INPUT_PROVIDERS.has(spec.provider) || seeing.has(specKey(spec)),
  });
  const fast = config.fast.map(entry);
  const smart = config.smart.map(entry);
  // Without MODEL_VISION: the reply tiers' entries that see, smart first, each once.
  const seen = new Map([...smart, ...fast].filter((candidate) => candidate.acceptsFiles).map((candidate) => [candidate.label, candidate]));
  const vision = config.vision.length > 0 ? config.vision.map(entry) : [...seen.values()];
  const chains: Record<ModelChain, readonly ModelEntry[]> = { fast, smart, vision };
  return { entries: (chain) => chains[chain] };
}

/** MODEL_EMBEDDING's model, through the same registry as the tiers' models; undefined when none is configured. */
export function createConfiguredEmbeddingModel(
  config: EmbeddingModelConfig,
): { label: string; model: EmbeddingModel; dimensions: number | undefined } | undefined {
  const spec = config.embedding;
  if (!spec) return undefined;
  return { label: specKey(spec), model: createRegistry(config).embeddingModel(specKey(spec) as `${string}:${string}`), dimensions: spec.dimensions };
}
