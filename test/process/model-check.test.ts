/**
 * A bad key is found at start, not by the first customer: the process asks each configured
 * provider once in the background (it still starts), a refusal is one log line naming the
 * variable to fix, and `/readyz` says `model: degraded`. The providers here are loopback stubs:
 * OpenAI's refusing every key (401), Anthropic's knowing one model. Twilio's credentials are
 * checked the same way (the fake Twilio API refusing a wrong auth token): `whatsapp: degraded`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import { eventually, ownRedisDatabase, startServiceProcess, TEST_ACCOUNT_SID, TEST_AUTH_TOKEN, testEnv, type ServiceProcess } from '../support/harness.js';
import { startFakeTwilio } from '../support/fake-twilio.js';
import { findFreePort } from '../support/services.js';

const BAD_KEY = 'sk-refused-by-the-stub-0123';

/** A loopback HTTP server answering by `answer`; the requests it saw. */
async function stubServer(answer: (request: IncomingMessage) => { status: number; body: unknown }) {
  const seen: { path: string; headers: IncomingMessage['headers'] }[] = [];
  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    seen.push({ path: request.url ?? '', headers: request.headers });
    const { status, body } = answer(request);
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { baseUrl: `http://127.0.0.1:${port}/v1`, seen, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

let openai: Awaited<ReturnType<typeof stubServer>>;
let anthropic: Awaited<ReturnType<typeof stubServer>>;
let service: ServiceProcess | undefined;
beforeAll(async () => {
  openai = await stubServer((request) =>
    request.headers.authorization === 'Bearer sk-good-key-4567'
      ? { status: 200, body: { object: 'list', data: [{ id: 'gpt-5', object: 'model' }] } }
      : { status: 401, body: { error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' } } },
  );
  anthropic = await stubServer((request) =>
    request.url === '/v1/models/claude-haiku-4-5'
      ? { status: 200, body: { id: 'claude-haiku-4-5-20251001', type: 'model' } }
      : { status: 404, body: { type: 'error', error: { type: 'not_found_error', message: 'model not found' } } },
  );
});
afterEach(async () => {
  await service?.kill();
  service = undefined;
});
afterAll(async () => {
  await openai.close();
  await anthropic.close();
});

async function start(extra: Record<string, string>): Promise<{ base: string; service: ServiceProcess }> {
  const port = await findFreePort();
  // NODE_ENV=development: under `test` the check is off (a test's process never asks a real provider).
  const env = testEnv('http://127.0.0.1:9', {
    NODE_ENV: 'development',
    PORT: String(port),
    OPENAI_BASE_URL: openai.baseUrl,
    ANTHROPIC_API_KEY: 'sk-ant-stub-key-89',
    ANTHROPIC_BASE_URL: anthropic.baseUrl,
    MODEL_FAST: 'anthropic:claude-haiku-4-5',
    MODEL_SMART: 'openai:gpt-5',
    ...ownRedisDatabase(13),
    ...extra,
  });
  service = await startServiceProcess(env, 'web');
  return { base: `http://127.0.0.1:${port}`, service };
}

const events = (output: string, event: string) =>
  output
    .split('\n')
    .filter((line) => line.includes(`"event":"${event}"`))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

describe('the model providers are checked at start', () => {
  test('a refused key: one line naming OPENAI_API_KEY, /readyz says model degraded, the service still serves', async () => {
    const { base, service: started } = await start({ OPENAI_API_KEY: BAD_KEY });
    const refused = await eventually(() => {
      const lines = events(started.output(), 'model-provider-refused');
      return lines.length > 0 ? lines : undefined;
    }, 20_000);
    expect(refused).toEqual([expect.objectContaining({ level: 'error', provider: 'openai', variable: 'OPENAI_API_KEY', status: 401 })]);
    expect(String(refused[0]?.problem)).toContain('OPENAI_API_KEY');
    expect(events(started.output(), 'model-provider-ok')).toEqual([expect.objectContaining({ provider: 'anthropic' })]);
    // The key went to the stub, once, with its own header; never into the log.
    expect(openai.seen.filter((request) => request.headers.authorization === `Bearer ${BAD_KEY}`).map((request) => request.path)).toEqual(['/v1/models']);
    expect(anthropic.seen.at(-1)?.headers['x-api-key']).toBe('sk-ant-stub-key-89');
    expect(started.output()).not.toContain(BAD_KEY);

    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual(expect.objectContaining({ status: 'degraded', checks: expect.objectContaining({ model: 'degraded', redis: 'ok' }) }));
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  }, 60_000);

  test('a model the provider does not know is refused the same way, naming the model', async () => {
    const { service: started } = await start({ OPENAI_API_KEY: 'sk-good-key-4567', MODEL_FAST: 'anthropic:claude-nonexistent-9' });
    const refused = await eventually(() => {
      const lines = events(started.output(), 'model-provider-refused');
      return lines.length > 0 ? lines : undefined;
    }, 20_000);
    expect(refused).toEqual([expect.objectContaining({ provider: 'anthropic', variable: 'ANTHROPIC_API_KEY', status: 404 })]);
    expect(String(refused[0]?.problem)).toContain('claude-nonexistent-9');
  }, 60_000);

  test('good keys and known models: model ok, ready', async () => {
    const { base, service: started } = await start({ OPENAI_API_KEY: 'sk-good-key-4567' });
    await eventually(() => events(started.output(), 'model-provider-ok').length === 2 || undefined, 20_000);
    expect(events(started.output(), 'model-provider-refused')).toEqual([]);
    const ready = await fetch(`${base}/readyz`);
    expect(await ready.json()).toEqual(expect.objectContaining({ status: 'ready', checks: expect.objectContaining({ model: 'ok' }) }));
  }, 60_000);
});

describe('the Twilio credentials are checked at start', () => {
  test('a wrong auth token: one line naming the variables, /readyz says whatsapp degraded, the service still serves', async () => {
    const twilio = await startFakeTwilio({ accountSid: TEST_ACCOUNT_SID, authToken: TEST_AUTH_TOKEN });
    try {
      const { base, service: started } = await start({
        OPENAI_API_KEY: 'sk-good-key-4567',
        TWILIO_API_BASE_URL: twilio.baseUrl,
        TWILIO_AUTH_TOKEN: 'a-made-up-token-5678',
      });
      const refused = await eventually(() => {
        const lines = events(started.output(), 'twilio-credentials-refused');
        return lines.length > 0 ? lines : undefined;
      }, 20_000);
      expect(refused).toEqual([expect.objectContaining({ level: 'error', status: 401, variables: ['TWILIO_ACCOUNT_SID', 'TWILIO_AUTH_TOKEN'] })]);
      expect(started.output()).not.toContain('a-made-up-token-5678');
      const ready = await fetch(`${base}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual(
        expect.objectContaining({ status: 'degraded', checks: expect.objectContaining({ whatsapp: 'degraded', model: 'ok' }) }),
      );
    } finally {
      await twilio.close();
    }
  }, 60_000);
});
