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
  /** The provider in words: its name, or the server a base URL names and the variable naming it. */
  label: string;
  /** The variable holding its address, when it is not the provider's default. */
  addressVariable: string | undefined;
  /** The base URL asked (the provider's default, or the one configured). */
  base: string;
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
        base,
        ...labelled(provider, openai.baseUrl, 'OPENAI_BASE_URL', 'the OpenAI-compatible server'),
        requests: [{ url: `${base}/models`, headers: { authorization: `Bearer ${openai.apiKey}` } }],
        listed: models,
      });
    } else if (provider === 'anthropic' && anthropic) {
      const base = trimSlash(anthropic.baseUrl ?? DEFAULT_BASE.anthropic);
      const headers = { 'x-api-key': anthropic.apiKey, 'anthropic-version': '2023-06-01' };
      result.push({
        provider,
        variable: 'ANTHROPIC_API_KEY',
        base,
        ...labelled(provider, anthropic.baseUrl, 'ANTHROPIC_BASE_URL', 'the Anthropic API'),
        requests: models.map((model) => ({ url: `${base}/models/${encodeURIComponent(model)}`, headers, model })),
      });
    } else if (provider === 'google' && google) {
      const base = trimSlash(google.baseUrl ?? DEFAULT_BASE.google);
      const headers = { 'x-goog-api-key': google.apiKey };
      result.push({
        provider,
        variable: 'GOOGLE_GENERATIVE_AI_API_KEY',
        base,
        ...labelled(provider, google.baseUrl, 'GOOGLE_GENERATIVE_AI_BASE_URL', 'the Google API'),
        requests: models.map((model) => ({ url: `${base}/models/${encodeURIComponent(model)}`, headers, model })),
      });
    } else if (compatible[provider]) {
      const server = compatible[provider];
      const name = `OPENAI_COMPATIBLE_${provider.toUpperCase().replaceAll('-', '_')}`;
      result.push({
        provider,
        variable: server.apiKey ? `${name}_API_KEY` : `${name}_BASE_URL`,
        base: trimSlash(server.baseUrl),
        ...labelled(provider, server.baseUrl, `${name}_BASE_URL`, `the ${provider} server`),
        requests: [{ url: `${trimSlash(server.baseUrl)}/models`, headers: server.apiKey ? { authorization: `Bearer ${server.apiKey}` } : {} }],
        listed: models,
      });
    }
  }
  return result;
}

/** How a provider is named in a problem: by its own name, or by the server its base URL points at. */
function labelled(provider: string, baseUrl: string | undefined, addressVariable: string, kind: string): Pick<Target, 'label' | 'addressVariable'> {
  if (baseUrl === undefined) return { label: provider, addressVariable: undefined };
  return { label: `${kind} at ${trimSlash(baseUrl)} (${addressVariable})`, addressVariable };
}

/** What an operator starts when nothing listens at an address (an OpenAI-compatible one may well be Ollama). */
function startAdvice(addressVariable: string): string {
  return /^OPENAI_(BASE_URL|COMPATIBLE_)/.test(addressVariable) ? 'start the server (Ollama: `ollama serve`)' : 'start the server';
}

/** The system error code (ECONNREFUSED, ENOTFOUND…) under a failed fetch, if any. */
function networkCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && /^E[A-Z_]+$/.test(code)) return code;
    current = current.cause;
  }
  return undefined;
}

/** A provider that did not answer, in words: nothing listening, a name that does not resolve, or no answer in time. */
function unreachableProblem(target: Target, url: string, error: unknown): string {
  const { label, addressVariable, base } = target;
  const fix = addressVariable ? ` or fix ${addressVariable}` : '';
  const code = networkCode(error);
  const address = new URL(url);
  if (code === 'ECONNREFUSED' && addressVariable) return `nothing listens at ${base} (${addressVariable}): ${startAdvice(addressVariable)}${fix}`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `could not reach ${label}: ${address.hostname} does not resolve (${code}): check the network${fix}`;
  const why = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
  return addressVariable ? `${label} did not answer (${why})` : `${label} did not answer at ${base} (${why})`;
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
      return result('unreachable', unreachableProblem(target, url, error));
    }
    const { status, body } = answer;
    const { label } = target;
    if (keyRefused(status, body)) return result('refused', `${label} refused ${variable} (${status}): set a valid key in ${variable}`, status);
    if (status === 404 && model !== undefined)
      return result('refused', `${label} does not know the model "${model}" (404): fix the MODEL_* list that names it`, status);
    if (status === 404) return result('unchecked', `${label} has no models list at ${url}: its models are not checked`, status);
    if (status < 200 || status >= 300) return result('unreachable', `${label} answered ${status} at ${url}`, status);
    const ids = target.listed ? listedIds(body) : undefined;
    const missing = ids && ids.length > 0 ? (target.listed ?? []).filter((id) => !ids.includes(id)) : [];
    if (missing.length > 0) {
      return result(
        'refused',
        `${target.label} does not list the model${missing.length > 1 ? 's' : ''} ${missing.map((id) => `"${id}"`).join(', ')}: fix the MODEL_* list that names it`,
      );
    }
  }
  return result('ok');
}

/** Checks every provider the model lists name, all at once; never throws. */
export async function checkProviders(config: ModelConfig, options: { fetch?: Fetch; timeoutMs?: number } = {}): Promise<ProviderCheckResult[]> {
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
