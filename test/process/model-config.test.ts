/**
 * The model lists (issue 25): each provider configured alone starts — key checks only, nothing
 * touches the network — and resolves its entries through the provider registry; a list naming a
 * provider with no key is refused at start-up with one line naming the entry and the variable.
 */
import { spawn } from 'node:child_process';
import { describe, expect, test } from '@jest/globals';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/errors/index.js';
import { createConfiguredModelProvider } from '../../src/model/provider.js';
import { eventually, testEnv } from '../support/harness.js';
import { RUN_TS } from '../support/run-ts.js';

const BASE = { PUBLIC_BASE_URL: 'https://assistant.example.test', WIDGET_TOKEN_SECRET: 'w'.repeat(32) };

/** Fails the test on any outbound request: building providers must not touch the network. */
function withoutNetwork<T>(run: () => T): T {
  const original = globalThis.fetch;
  globalThis.fetch = () => Promise.reject(new Error('no network at start-up'));
  try {
    return run();
  } finally {
    globalThis.fetch = original;
  }
}

const describeEntries = (env: Record<string, string>) =>
  withoutNetwork(() => {
    const models = createConfiguredModelProvider(loadConfig({ ...BASE, ...env }).model);
    return (['fast', 'smart', 'vision'] as const).map((chain) =>
      models.entries(chain).map((entry) => ({
        label: entry.label,
        provider: entry.provider,
        files: entry.acceptsFiles,
        modelId: typeof entry.model === 'string' ? entry.model : entry.model.modelId,
      })),
    );
  });

describe('each provider configured alone', () => {
  test("today's configuration: OPENAI_API_KEY and bare model names are OpenAI's, as before", () => {
    const [fast, smart, vision] = describeEntries({ OPENAI_API_KEY: 'sk-openai', MODEL_FAST: 'gpt-5-mini' });
    expect(fast).toEqual([{ label: 'gpt-5-mini', provider: 'openai', files: true, modelId: 'gpt-5-mini' }]);
    expect(smart).toEqual([{ label: 'gpt-5', provider: 'openai', files: true, modelId: 'gpt-5' }]);
    // No MODEL_VISION: the reply tiers' models that see, smart first, each once.
    expect(vision?.map((entry) => entry.label)).toEqual(['gpt-5', 'gpt-5-mini']);
    const [, , once] = describeEntries({ OPENAI_API_KEY: 'sk-openai', MODEL_FAST: 'gpt-5-mini,gpt-5' });
    expect(once?.map((entry) => entry.label)).toEqual(['gpt-5', 'gpt-5-mini']);
  });

  test('OPENAI_BASE_URL: a Chat Completions server, bare names still OpenAI', () => {
    const [fast] = describeEntries({
      OPENAI_API_KEY: 'sk-openai',
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      MODEL_FAST: 'llama3.1:8b',
      MODEL_SMART: 'openai:gpt-x',
    });
    expect(fast).toEqual([{ label: 'llama3.1:8b', provider: 'openai', files: true, modelId: 'llama3.1:8b' }]);
  });

  test('Anthropic alone', () => {
    const [fast, smart] = describeEntries({
      ANTHROPIC_API_KEY: 'sk-ant',
      MODEL_FAST: 'anthropic:claude-haiku-4-5',
      MODEL_SMART: 'anthropic:claude-sonnet-4-5',
    });
    expect(fast).toEqual([{ label: 'anthropic:claude-haiku-4-5', provider: 'anthropic', files: true, modelId: 'claude-haiku-4-5' }]);
    expect(smart?.[0]?.label).toBe('anthropic:claude-sonnet-4-5');
  });

  test('Google alone', () => {
    const [fast] = describeEntries({ GOOGLE_GENERATIVE_AI_API_KEY: 'g-key', MODEL_FAST: 'google:gemini-2.5-flash', MODEL_SMART: 'google:gemini-2.5-pro' });
    expect(fast).toEqual([{ label: 'google:gemini-2.5-flash', provider: 'google', files: true, modelId: 'gemini-2.5-flash' }]);
  });

  test('a named OpenAI-compatible server alone (no key needed): text-only unless MODEL_VISION lists the model', () => {
    const [fast, smart, vision] = describeEntries({
      OPENAI_COMPATIBLE_OLLAMA_BASE_URL: 'http://127.0.0.1:11434/v1',
      MODEL_FAST: 'ollama:llama3.1:8b',
      MODEL_SMART: 'ollama:qwen2.5vl:7b',
      MODEL_VISION: 'ollama:qwen2.5vl:7b',
    });
    expect(fast).toEqual([{ label: 'ollama:llama3.1:8b', provider: 'ollama', files: false, modelId: 'llama3.1:8b' }]);
    expect(smart?.[0]?.files).toBe(true);
    expect(vision?.map((entry) => entry.label)).toEqual(['ollama:qwen2.5vl:7b']);
  });

  test('a list in priority order, across providers', () => {
    const [, smart] = describeEntries({
      OPENAI_API_KEY: 'sk-openai',
      ANTHROPIC_API_KEY: 'sk-ant',
      OPENAI_COMPATIBLE_GROQ_BASE_URL: 'https://api.groq.example/openai/v1',
      OPENAI_COMPATIBLE_GROQ_API_KEY: 'gsk',
      MODEL_SMART: 'anthropic:claude-sonnet-4-5, openai:gpt-5 ,groq:llama-3.3-70b',
    });
    expect(smart?.map((entry) => entry.label)).toEqual(['anthropic:claude-sonnet-4-5', 'gpt-5', 'groq:llama-3.3-70b']);
  });
});

describe('refused at start-up', () => {
  const refusal = (env: Record<string, string>) => {
    try {
      loadConfig({ ...BASE, ...env });
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as Error).message;
    }
    throw new Error('expected a refusal');
  };

  test('a list naming a provider with no key: one line naming the entry and the variable to set', () => {
    expect(refusal({ OPENAI_API_KEY: 'sk-openai', MODEL_SMART: 'anthropic:claude-sonnet-4-5,openai:gpt-5' })).toBe(
      'invalid configuration: MODEL_SMART: "anthropic:claude-sonnet-4-5" names provider anthropic, which has no key (set ANTHROPIC_API_KEY)',
    );
  });

  test('no key at all: the default OpenAI lists say what is missing', () => {
    expect(refusal({})).toContain('MODEL_FAST: "gpt-5-mini" names provider openai, which has no key (set OPENAI_API_KEY)');
  });

  test('a compatible server with a key but no base URL', () => {
    expect(refusal({ OPENAI_API_KEY: 'k', OPENAI_COMPATIBLE_GROQ_API_KEY: 'gsk' })).toContain('OPENAI_COMPATIBLE_GROQ_BASE_URL: is required');
  });
});

/** `src/main.ts web` with this environment: its exit code (after SIGTERM once it listened) and what it printed. */
async function runWeb(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [...RUN_TS, 'src/main.ts', 'web'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    await Promise.race([eventually(() => output.stdout.includes('"event":"server-listening"') || undefined, 20_000), exit]);
  } finally {
    if (child.exitCode === null) child.kill('SIGTERM');
  }
  return { code: await exit, ...output };
}

/** The test environment with no OpenAI key: the given provider is the only one. */
function alone(extra: Record<string, string>): Record<string, string> {
  const { OPENAI_API_KEY: _unused, ...env } = testEnv('http://127.0.0.1:1', { PORT: '0', ...extra });
  return env;
}

describe('the service as a process', () => {
  test.each([
    ['Anthropic', { ANTHROPIC_API_KEY: 'sk-ant', MODEL_FAST: 'anthropic:claude-haiku-4-5', MODEL_SMART: 'anthropic:claude-sonnet-4-5' }],
    ['Google', { GOOGLE_GENERATIVE_AI_API_KEY: 'g-key', MODEL_FAST: 'google:gemini-2.5-flash', MODEL_SMART: 'google:gemini-2.5-pro' }],
    [
      'a compatible server',
      { OPENAI_COMPATIBLE_OLLAMA_BASE_URL: 'http://127.0.0.1:9/v1', MODEL_FAST: 'ollama:llama3.1:8b', MODEL_SMART: 'ollama:llama3.1:8b' },
    ],
  ])(
    'starts with %s alone, no OpenAI key',
    async (_name, extra) => {
      const { code, stdout, stderr } = await runWeb(alone(extra));
      expect(stdout).toContain('"event":"server-listening"');
      // On a failure, what the process said last (a stop by a signal it did not handle has code null).
      expect({ code, said: code === 0 ? '' : `${stdout.slice(-1500)}\n${stderr.slice(-1500)}` }).toEqual({ code: 0, said: '' });
    },
    60_000,
  );

  test('refuses a list naming a provider with no key: exit 1, one line on stderr', async () => {
    const { code, stderr } = await runWeb(
      alone({
        MODEL_FAST: 'anthropic:claude-haiku-4-5',
        MODEL_SMART: 'anthropic:claude-sonnet-4-5',
        ANTHROPIC_API_KEY: 'sk-ant',
        MODEL_VISION: 'google:gemini-2.5-flash',
      }),
    );
    expect(code).toBe(1);
    expect(stderr).toBe(
      'invalid configuration: MODEL_VISION: "google:gemini-2.5-flash" names provider google, which has no key (set GOOGLE_GENERATIVE_AI_API_KEY)\n',
    );
  }, 30_000);
});
