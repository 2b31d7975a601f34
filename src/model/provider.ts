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

export interface ModelProvider {
  model(tier: ModelTier): LanguageModel;
}

export function createOpenAIModelProvider(config: Config['model']): ModelProvider {
  const provider = createOpenAI({ apiKey: config.apiKey, ...(config.baseUrl ? { baseURL: config.baseUrl } : {}) });
  const build = (modelId: string): LanguageModel => (config.baseUrl ? provider.chat(modelId) : provider.responses(modelId));
  const models: Record<ModelTier, LanguageModel> = { fast: build(config.fast), smart: build(config.smart) };
  return { model: (tier) => models[tier] };
}
