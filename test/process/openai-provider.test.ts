/**
 * The real model path: `@ai-sdk/openai` speaking Chat Completions over HTTP to a local
 * OpenAI-compatible server, from a signed webhook to the reply Twilio receives.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { APOLOGY_TEXT } from '../../src/turn/handle-inbound.js';
import { schemaDefault, type JsonSchema } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { turnsSettled } from '../support/settled.js';
import { startOpenAIStub, type OpenAIStub } from '../support/openai-stub.js';

describe('the OpenAI provider against a Chat Completions server', () => {
  let stub: OpenAIStub;
  let harness: Harness;
  beforeAll(async () => {
    stub = await startOpenAIStub();
    harness = await startHarness({
      // The breaker stays shut here (its own suite is test/orchestrator/provider-failover.test.ts).
      env: { OPENAI_BASE_URL: stub.baseUrl, OPENAI_API_KEY: 'sk-local-test', MODEL_FAST: 'gpt-test-fast', MODEL_BREAKER_FAILURES: '100' },
      useConfiguredModel: true,
    });
  });
  afterAll(async () => {
    await harness.close();
    await stub.close();
  });

  test('a customer message is answered by the configured model over HTTP', async () => {
    stub.respondWith((body) =>
      body.response_format
        ? { json: schemaDefault((body.response_format as { json_schema: { schema: JsonSchema } }).json_schema.schema) }
        : { text: `Stub reply to ${body.messages.length} messages` },
    );
    await harness.sendWhatsapp({ from: 'whatsapp:+15005550006', body: 'hello model' });
    const [reply] = await harness.twilio.waitForMessages(1);
    // System prompt, the fenced customer context (the profile name), the customer's message.
    expect(reply?.body).toBe('Stub reply to 3 messages');
    // The judge's structured call goes out as a strict JSON schema, then the reply call.
    const [judge, call] = stub.requests;
    expect(stub.requests).toHaveLength(2);
    expect(judge?.body.response_format).toMatchObject({ type: 'json_schema', json_schema: { strict: true } });
    expect(call?.path).toBe('/v1/chat/completions');
    expect(call?.headers.authorization).toBe('Bearer sk-local-test');
    expect(call?.body.model).toBe('gpt-test-fast');
    expect(call?.body.max_completion_tokens ?? call?.body.max_tokens).toBe(1024);
    expect(call?.body.messages.at(-1)).toEqual({ role: 'user', content: 'hello model' });
    expect(call?.body.messages.at(-2)).toEqual({ role: 'user', content: '<customer-context>\nWhatsApp profile name: "Test Customer"\n</customer-context>' });
    expect(JSON.stringify(call?.body.messages[0])).not.toContain('Test Customer');
  });

  test('an HTTP 500 from the model is retried, never apologised for: the customer gets the real answer once it is back, once', async () => {
    harness.twilio.reset();
    stub.reset();
    stub.respondWith({ status: 500, body: { error: { message: 'boom', type: 'server_error' } } });
    await harness.sendWhatsapp({ from: 'whatsapp:+15005550007', body: 'are you up?' });
    // Judge (no retry), route fallback (no retry), then the reply call, which the SDK retries
    // once on a 5xx (maxRetries: 1 on a list's last entry); then the turn fails for the queue.
    await eventually(() => harness.logs.find((line) => line.event === 'inbound-retrying'));
    expect(stub.requests).toHaveLength(4);
    expect(harness.logs).toContainEqual(expect.objectContaining({ event: 'route-fallback-failed' }));
    expect(harness.twilio.messages).toHaveLength(0);
    stub.respondWith((body) =>
      body.response_format
        ? { json: schemaDefault((body.response_format as { json_schema: { schema: JsonSchema } }).json_schema.schema) }
        : { text: 'Back and answering' },
    );
    const [reply] = await harness.twilio.waitForMessages(1);
    expect(reply?.body).toBe('Back and answering');
    await turnsSettled(harness.services);
    expect(harness.twilio.messages.map((message) => message.body)).not.toContain(APOLOGY_TEXT);
    expect(harness.twilio.messages).toHaveLength(1);
  });
});
