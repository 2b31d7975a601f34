/**
 * Model access. Production builds the provider from configuration only: `@ai-sdk/openai`
 * against OpenAI (Responses API) or, when a base URL is set, any Chat Completions server.
 * There is no configuration that selects a test model: tests hand their deterministic model
 * to `createServices` in code, which no environment variable can reach.
 */
import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModel } from 'ai';
import type { Config } from '../config.js';
import type { ModelTier } from '../contracts/index.js';

export type { ModelTier };

/**
 * Every AI SDK call runs with its telemetry off: nothing here subscribes to it, and left on, each
 * call builds redacted copies of its events for Node's tracing channel whether or not anyone
 * listens (about 5% of the worker's CPU in the bench's profile).
 */
export const MODEL_TELEMETRY = { isEnabled: false } as const;

export interface ModelProvider {
  model(tier: ModelTier): LanguageModel;
}

export function createOpenAIModelProvider(config: Config['model']): ModelProvider {
  const provider = createOpenAI({ apiKey: config.apiKey, ...(config.baseUrl ? { baseURL: config.baseUrl } : {}) });
  const build = (modelId: string): LanguageModel => (config.baseUrl ? provider.chat(modelId) : provider.responses(modelId));
  const models: Record<ModelTier, LanguageModel> = { fast: build(config.fast), smart: build(config.smart) };
  return { model: (tier) => models[tier] };
}
