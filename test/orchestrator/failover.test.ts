/**
 * One leg along a tier's list (issue 25), with the real AI SDK over mock models: a retryable
 * failure moves it to the next entry, streaming included — but only before the first chunk went
 * out to the customer; after that the leg fails (retryable, for the queue) instead of starting
 * a second answer. A refusal for good (a 400) is not tried elsewhere.
 */
import { describe, expect, test } from '@jest/globals';
import { APICallError, type LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { MockLanguageModelV4 } from 'ai/test';
import { classifyFailure, ModelCallError } from '../../src/errors/index.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import type { ModelEntry } from '../../src/model/provider.js';
import { callModel } from '../../src/orchestrator/call-model.js';
import type { ToolCallContext } from '../../src/contracts/tool.js';

const usage = { inputTokens: { total: 3, noCache: 3, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 2, text: 2, reasoning: 0 } };

const apiError = (statusCode: number) =>
  new APICallError({ message: `HTTP ${statusCode}`, url: 'http://127.0.0.1/v1', requestBodyValues: {}, statusCode, isRetryable: statusCode >= 500 });

function streaming(parts: LanguageModelV4StreamPart[]): ReadableStream<LanguageModelV4StreamPart> {
  return new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(part);
      controller.close();
    },
  });
}

const answer = (text: string): LanguageModelV4StreamPart[] => [
  { type: 'stream-start', warnings: [] },
  { type: 'text-start', id: 't' },
  ...text.split(' ').map((word, index): LanguageModelV4StreamPart => ({ type: 'text-delta', id: 't', delta: index === 0 ? word : ` ${word}` })),
  { type: 'text-end', id: 't' },
  { type: 'finish', finishReason: { unified: 'stop', raw: undefined }, usage },
];

function entry(label: string, doStream: MockLanguageModelV4['doStream']): { entry: ModelEntry; model: MockLanguageModelV4 } {
  const model = new MockLanguageModelV4({ provider: label, modelId: label, doStream });
  return { entry: { provider: label, label, model, acceptsFiles: true }, model };
}

async function leg(entries: ModelEntry[]) {
  const deltas: string[] = [];
  const logs: unknown[] = [];
  const run = callModel({
    tier: 'fast',
    entries,
    breakers: undefined,
    observer: undefined,
    logger: createLogger({ level: 'debug', sink: (line) => logs.push(JSON.parse(line)) }),
    metrics: createMetrics(),
    system: 'You answer.',
    messages: [{ role: 'user', content: 'hello' }],
    tools: [],
    toolContext: {} as ToolCallContext,
    onScopeDenied: () => undefined,
    limits: { maxSteps: 1, maxOutputTokens: 100, timeoutMs: 5_000 },
    signal: new AbortController().signal,
    onTextDelta: (delta) => deltas.push(delta),
  });
  return { run, deltas };
}

describe('a streamed leg along the list', () => {
  test('the primary failing before its first chunk: the next entry answers, and only its words went out', async () => {
    const primary = entry('primary', () => Promise.reject(apiError(503)));
    const backup = entry('backup', () => Promise.resolve({ stream: streaming(answer('backup says hi')) }));
    const { run, deltas } = await leg([primary.entry, backup.entry]);
    const result = await run;
    expect(result.text).toBe('backup says hi');
    expect(result.entry.label).toBe('backup');
    expect(deltas.join('')).toBe('backup says hi');
  });

  test('the primary failing after a chunk went out: the leg fails, retryable, and the next entry is never called', async () => {
    const primary = entry('primary', () => Promise.resolve({ stream: streaming([...answer('half an').slice(0, 3), { type: 'error', error: apiError(500) }]) }));
    const backup = entry('backup', () => Promise.resolve({ stream: streaming(answer('backup says hi')) }));
    const { run, deltas } = await leg([primary.entry, backup.entry]);
    const failure = await run.catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ModelCallError);
    expect(classifyFailure(failure)).toBe('infrastructure');
    expect(deltas).toEqual(['half']);
    expect(backup.model.doStreamCalls).toHaveLength(0);
  });

  test("the primary refusing our key (401) is that provider's problem: the next entry answers", async () => {
    const primary = entry('primary', () => Promise.reject(apiError(401)));
    const backup = entry('backup', () => Promise.resolve({ stream: streaming(answer('backup says hi')) }));
    const { run } = await leg([primary.entry, backup.entry]);
    expect((await run).entry.label).toBe('backup');
  });

  test('a refusal of the request itself (400) is not tried on the next entry', async () => {
    const primary = entry('primary', () => Promise.reject(apiError(400)));
    const backup = entry('backup', () => Promise.resolve({ stream: streaming(answer('backup says hi')) }));
    const { run } = await leg([primary.entry, backup.entry]);
    const failure = await run.catch((error: unknown) => error);
    expect(classifyFailure(failure)).toBe('deterministic');
    expect(backup.model.doStreamCalls).toHaveLength(0);
  });
});

describe("a provider's breaker", () => {
  test('output the SDK could not parse moves the call on, but tells the breaker the provider is up (a success, never a failure)', async () => {
    const { NoObjectGeneratedError } = await import('ai');
    const { withFailover } = await import('../../src/orchestrator/failover.js');
    const settled: string[] = [];
    const breakers = {
      admit: () => true,
      succeeded: async (provider: string) => void settled.push(`succeeded ${provider}`),
      failed: async (provider: string) => void settled.push(`failed ${provider}`),
      released: async (provider: string) => void settled.push(`released ${provider}`),
    };
    const model = new MockLanguageModelV4({});
    const entries: ModelEntry[] = ['judge-a', 'judge-b'].map((label) => ({ provider: label, label, model, acceptsFiles: true }));
    const options = {
      chain: 'fast' as const,
      entries,
      breakers: breakers as never,
      timeoutMs: 5_000,
      signal: new AbortController().signal,
      purpose: 'judge' as const,
      observer: undefined,
      logger: createLogger({ level: 'error', sink: () => undefined }),
      metrics: createMetrics(),
    };
    const result = await withFailover(options, async (attempt) => {
      if (attempt.entry.provider === 'judge-a') {
        throw new NoObjectGeneratedError({
          message: 'could not parse the response',
          text: 'Not JSON',
          response: undefined as never,
          usage: usage as never,
          finishReason: 'stop',
        });
      }
      return { usage: usage as never, text: 'ok' };
    });
    expect(result.entry.provider).toBe('judge-b');
    expect(settled).toEqual(['succeeded judge-a', 'succeeded judge-b']);
  });
});
