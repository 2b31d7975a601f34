// Self-test of test/support/openai-stub.ts through the real provider path: createOpenAI({
// baseURL }).chat(model) with generateText, streamText, structured output
// (response_format json_schema), tool calls, errors and malformed bodies.
import { createOpenAI } from '@ai-sdk/openai';
import { APICallError, generateText, Output, streamText, tool } from 'ai';
import { z } from 'zod';
import { defaultStubAnswer, startOpenAIStub, type OpenAIStub } from '../support/openai-stub.js';

describe('OpenAI stub', () => {
  let stub: OpenAIStub;

  beforeAll(async () => {
    stub = await startOpenAIStub();
  });

  afterEach(() => stub.reset());

  afterAll(async () => {
    await stub.close();
  });

  function model(): ReturnType<ReturnType<typeof createOpenAI>['chat']> {
    return createOpenAI({ baseURL: stub.baseUrl, apiKey: 'test' }).chat('gpt-x');
  }

  test('generateText gets the default answer with usage, and the request is recorded', async () => {
    const result = await generateText({ model: model(), system: 'Be brief.', prompt: 'Hello?' });
    expect(result.text).toBe(defaultStubAnswer);
    expect(result.finishReason).toBe('stop');
    expect(result.usage.inputTokens).toBeGreaterThan(0);
    expect(result.usage.outputTokens).toBeGreaterThan(0);
    expect(stub.requests).toHaveLength(1);
    const [request] = stub.requests;
    expect(request?.path).toBe('/v1/chat/completions');
    expect(request?.headers.authorization).toBe('Bearer test');
    expect(request?.body.model).toBe('gpt-x');
    expect(request?.body.stream).toBeFalsy();
    expect(request?.body.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hello?' },
    ]);
  });

  test('streamText receives the answer in several deltas, then usage', async () => {
    stub.respondWith((body) => ({ text: `You said: ${String(body.messages.at(-1)?.content)} and more words here`, chunkDelayMs: 2 }));
    const result = streamText({ model: model(), prompt: 'ping' });
    const deltas: string[] = [];
    for await (const delta of result.textStream) deltas.push(delta);
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.join('')).toBe('You said: ping and more words here');
    expect(await result.finishReason).toBe('stop');
    expect((await result.usage).outputTokens).toBeGreaterThan(0);
    expect(stub.requests[0]?.body.stream).toBe(true);
    expect(stub.requests[0]?.body.stream_options).toEqual({ include_usage: true });
  });

  test('structured output: response_format json_schema, handler text is the JSON', async () => {
    const schema = z.object({ route: z.enum(['sales', 'support']), inScope: z.boolean() });
    stub.respondWith((body) => {
      expect(body.response_format?.type).toBe('json_schema');
      return { json: { route: 'sales', inScope: true } };
    });
    const result = await generateText({ model: model(), prompt: 'I want to buy', output: Output.object({ schema }) });
    expect(result.output).toEqual({ route: 'sales', inScope: true });
    const format = stub.requests[0]?.body.response_format;
    expect(format?.json_schema?.schema).toMatchObject({ type: 'object', properties: { route: { enum: ['sales', 'support'] } } });
  });

  test('structured output while streaming', async () => {
    stub.respondWith({ text: JSON.stringify({ route: 'support', inScope: false }) });
    const result = streamText({ model: model(), prompt: 'help', output: Output.object({ schema: z.object({ route: z.string(), inScope: z.boolean() }) }) });
    expect(await result.output).toEqual({ route: 'support', inScope: false });
  });

  test('tool calls reach the tool, in generate and stream modes', async () => {
    const calls: unknown[] = [];
    const tools = {
      handoff: tool({
        description: 'Hand the conversation to a person',
        inputSchema: z.object({ team: z.enum(['sales', 'support']), summary: z.string() }),
        execute: async (input) => {
          calls.push(input);
          return { queued: true };
        },
      }),
    };
    stub.respondWith({ toolCalls: [{ name: 'handoff', arguments: { team: 'support', summary: 'printer on fire' } }] });
    const generated = await generateText({ model: model(), prompt: 'my printer is on fire', tools });
    expect(generated.finishReason).toBe('tool-calls');
    expect(generated.toolCalls.map((call) => call.toolName)).toEqual(['handoff']);
    expect(stub.requests[0]?.body.tools?.[0]?.function.name).toBe('handoff');

    const streamed = streamText({ model: model(), prompt: 'again', tools });
    await streamed.consumeStream();
    expect((await streamed.toolCalls).map((call) => call.input)).toEqual([{ team: 'support', summary: 'printer on fire' }]);
    expect(calls).toEqual([
      { team: 'support', summary: 'printer on fire' },
      { team: 'support', summary: 'printer on fire' },
    ]);
  });

  test('respondOnce replies are served in order before the handler', async () => {
    stub.respondOnce({ text: 'first' }, () => ({ text: 'second' }));
    const answers: string[] = [];
    for (let index = 0; index < 3; index += 1) answers.push((await generateText({ model: model(), prompt: 'next' })).text);
    expect(answers).toEqual(['first', 'second', defaultStubAnswer]);
  });

  test('an error reply surfaces as APICallError with the status', async () => {
    stub.respondWith({ status: 503 });
    const failure = await generateText({ model: model(), prompt: 'x', maxRetries: 0 }).catch((error: unknown) => error);
    expect(APICallError.isInstance(failure)).toBe(true);
    expect((failure as APICallError).statusCode).toBe(503);
    expect(stub.requests).toHaveLength(1);
  });

  test('a raw malformed body makes the call fail', async () => {
    stub.respondWith({ raw: '{"choices": [ this is not json' });
    await expect(generateText({ model: model(), prompt: 'x', maxRetries: 0 })).rejects.toThrow();
  });

  test('refuses a request without an API key like OpenAI', async () => {
    const response = await fetch(`${stub.baseUrl}/chat/completions`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 'invalid_api_key' } });
  });
});
