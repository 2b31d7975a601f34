/**
 * The start-up check of the configured model providers: one cheap authenticated request per
 * provider the lists name (OpenAI and compatible servers: the models list; Anthropic and Google:
 * the model's own entry, one per model), made in the background — a process never waits on it.
 * A refusal (401/403, an invalid key, a model the provider does not know) is one log line
 * naming the variable to fix, and the `model` readiness check reports `degraded` from then on;
 * a provider that does not answer is a warning only (it may be down briefly; the circuit breaker
 * and failover handle that at call time).
 */
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';

export type ProviderCheckState = 'ok' | 'refused' | 'unreachable' | 'unchecked';

export interface ProviderCheckResult {
  provider: string;
  /** The variable an operator fixes (the provider's key, or its base URL when it has none). */
  variable: string;
  state: ProviderCheckState;
  /** What is wrong, in words (empty when ok). */
  problem: string;
  status?: number;
}

type ModelConfig = Config['model'];
type Fetch = typeof fetch;

interface Target {
  provider: string;
  variable: string;
  /** The requests to make: each a URL, its headers, and the model it asks about (a list request: none). */
  requests: { url: string; headers: Record<string, string>; model?: string }[];
  /** Models to find in a models list's `data[].id` (OpenAI-style providers). */
  listed?: string[];
}

const DEFAULT_BASE = {
  openai: 'https://api.openai.com/v1',
  anthropic: 'https://api.anthropic.com/v1',
  google: 'https://generativelanguage.googleapis.com/v1beta',
} as const;

const CHECK_TIMEOUT_MS = 10_000;

const trimSlash = (url: string) => url.replace(/\/+$/, '');

/** Each provider a list names, with the model ids asked of it. */
function modelsByProvider(config: ModelConfig): Map<string, string[]> {
  const byProvider = new Map<string, string[]>();
  for (const spec of [...config.fast, ...config.smart, ...config.vision]) {
    const ids = byProvider.get(spec.provider) ?? [];
    if (!ids.includes(spec.modelId)) ids.push(spec.modelId);
    byProvider.set(spec.provider, ids);
  }
  return byProvider;
}

function targets(config: ModelConfig): Target[] {
  const { openai, anthropic, google, compatible } = config.providers;
  const result: Target[] = [];
  for (const [provider, models] of modelsByProvider(config)) {
    if (provider === 'openai' && openai) {
      const base = trimSlash(openai.baseUrl ?? DEFAULT_BASE.openai);
      result.push({
        provider,
        variable: 'OPENAI_API_KEY',
        requests: [{ url: `${base}/models`, headers: { authorization: `Bearer ${openai.apiKey}` } }],
        listed: models,
      });
    } else if (provider === 'anthropic' && anthropic) {
      const base = trimSlash(anthropic.baseUrl ?? DEFAULT_BASE.anthropic);
      const headers = { 'x-api-key': anthropic.apiKey, 'anthropic-version': '2023-06-01' };
      result.push({
        provider,
        variable: 'ANTHROPIC_API_KEY',
        requests: models.map((model) => ({ url: `${base}/models/${encodeURIComponent(model)}`, headers, model })),
      });
    } else if (provider === 'google' && google) {
      const base = trimSlash(google.baseUrl ?? DEFAULT_BASE.google);
      const headers = { 'x-goog-api-key': google.apiKey };
      result.push({
        provider,
        variable: 'GOOGLE_GENERATIVE_AI_API_KEY',
        requests: models.map((model) => ({ url: `${base}/models/${encodeURIComponent(model)}`, headers, model })),
      });
    } else if (compatible[provider]) {
      const server = compatible[provider];
      const name = `OPENAI_COMPATIBLE_${provider.toUpperCase().replaceAll('-', '_')}`;
      result.push({
        provider,
        variable: server.apiKey ? `${name}_API_KEY` : `${name}_BASE_URL`,
        requests: [{ url: `${trimSlash(server.baseUrl)}/models`, headers: server.apiKey ? { authorization: `Bearer ${server.apiKey}` } : {} }],
        listed: models,
      });
    }
  }
  return result;
}

/** Google answers an invalid key with 400 `API_KEY_INVALID`; everyone else with 401 or 403. */
const keyRefused = (status: number, body: string) => status === 401 || status === 403 || (status === 400 && /API_KEY_INVALID|API key not valid/i.test(body));

async function request(fetcher: Fetch, url: string, headers: Record<string, string>, timeoutMs: number): Promise<{ status: number; body: string }> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  try {
    const response = await fetcher(url, { headers, signal: controller.signal });
    return { status: response.status, body: await response.text() };
  } finally {
    clearTimeout(timer);
  }
}

function listedIds(body: string): string[] | undefined {
  try {
    const parsed = JSON.parse(body) as { data?: unknown };
    if (!Array.isArray(parsed.data)) return undefined;
    return parsed.data.flatMap((item: unknown) =>
      item && typeof item === 'object' && typeof (item as { id?: unknown }).id === 'string' ? [(item as { id: string }).id] : [],
    );
  } catch {
    return undefined;
  }
}

async function checkTarget(target: Target, fetcher: Fetch, timeoutMs: number): Promise<ProviderCheckResult> {
  const { provider, variable } = target;
  const result = (state: ProviderCheckState, problem = '', status?: number): ProviderCheckResult => ({
    provider,
    variable,
    state,
    problem,
    ...(status === undefined ? {} : { status }),
  });
  for (const { url, headers, model } of target.requests) {
    let answer: { status: number; body: string };
    try {
      answer = await request(fetcher, url, headers, timeoutMs);
    } catch (error) {
      const why = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
      return result('unreachable', `${provider} did not answer at ${new URL(url).origin} (${why}); the service starts and retries at each call`);
    }
    const { status, body } = answer;
    if (keyRefused(status, body)) return result('refused', `${provider} refused ${variable} (${status}): set a valid key in ${variable}`, status);
    if (status === 404 && model !== undefined)
      return result('refused', `${provider} does not know the model "${model}" (404): fix the MODEL_* list that names it`, status);
    if (status === 404) return result('unchecked', `${provider} has no models list at ${url}: its models are not checked`, status);
    if (status < 200 || status >= 300)
      return result('unreachable', `${provider} answered ${status} at ${url}; the service starts and retries at each call`, status);
    const ids = target.listed ? listedIds(body) : undefined;
    const missing = ids && ids.length > 0 ? (target.listed ?? []).filter((id) => !ids.includes(id)) : [];
    if (missing.length > 0) {
      return result(
        'refused',
        `${provider} does not list the model${missing.length > 1 ? 's' : ''} ${missing.map((id) => `"${id}"`).join(', ')}: fix the MODEL_* list that names it`,
      );
    }
  }
  return result('ok');
}

/** Checks every provider the model lists name, all at once; never throws. */
async function checkProviders(config: ModelConfig, options: { fetch?: Fetch; timeoutMs?: number } = {}): Promise<ProviderCheckResult[]> {
  const fetcher = options.fetch ?? fetch;
  return Promise.all(targets(config).map((target) => checkTarget(target, fetcher, options.timeoutMs ?? CHECK_TIMEOUT_MS)));
}

export interface ProviderCheck {
  /** Settles when every provider has answered (or not, within the timeout). */
  done: Promise<ProviderCheckResult[]>;
  /** For `/readyz`: fails (degraded) once a provider refused its key or a model; fine while the check runs. */
  readiness: { name: 'model'; check(): Promise<void>; degradable: true };
}

/** Starts the check in the background: a refusal is one error line naming the variable, a provider not answering a warning. */
export function startProviderCheck(config: ModelConfig, logger: Logger, options: { fetch?: Fetch; timeoutMs?: number } = {}): ProviderCheck {
  let refused: ProviderCheckResult[] = [];
  const done = checkProviders(config, options).then((results) => {
    for (const { provider, variable, state, problem, status } of results) {
      const fields = { provider, variable, problem, ...(status === undefined ? {} : { status }) };
      if (state === 'refused') logger.error('model-provider-refused', fields);
      else if (state === 'unreachable') logger.warn('model-provider-unreachable', fields);
      else if (state === 'unchecked') logger.info('model-provider-unchecked', fields);
      else logger.info('model-provider-ok', { provider });
    }
    refused = results.filter((result) => result.state === 'refused');
    return results;
  });
  return {
    done,
    readiness: {
      name: 'model',
      degradable: true,
      check: async () => {
        if (refused.length > 0) throw new Error(refused.map((result) => result.problem).join('; '));
      },
    },
  };
}
