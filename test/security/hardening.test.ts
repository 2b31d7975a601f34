/**
 * Findings of the security review that live at the HTTP edge: request targets the router
 * can't place, /metrics off the public port, browser hardening headers, and secrets that
 * must never reach a log line.
 */
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { configuredSecrets, loadConfig } from '../../src/config.js';
import { createLogger, redactSecrets } from '../../src/logger.js';
import { startFakeTwilio } from '../support/fake-twilio.js';
import { startOpenAIStub, type OpenAIStub } from '../support/openai-stub.js';
import { findFreePort } from '../support/services.js';
import { eventually, startHarness, testEnv, TEST_AUTH_TOKEN, TEST_SENDER, TEST_ACCOUNT_SID, newMessageSid, type Harness } from '../support/harness.js';
import { inboundWhatsappParams, signedWebhook } from '../support/twilio-signature.js';
import { RUN_TS } from '../support/run-ts.js';

/** Sends raw bytes and returns the raw response (the request asks the server to close). */
function rawRequest(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    let response = '';
    socket.on('data', (chunk: Buffer) => (response += chunk.toString('utf8')));
    socket.on('end', () => resolve(response));
    socket.on('error', reject);
    socket.write(text);
  });
}

async function listen(harness: Harness): Promise<{ server: Server; port: number }> {
  const server = harness.services.app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

describe('request targets', () => {
  // A public URL with a port, as in a staging deployment: concatenated with an absolute target it stops being a URL.
  const publicBaseUrl = 'https://assistant.example.test:8443';
  let harness: Harness;
  let server: Server;
  let port: number;
  beforeAll(async () => {
    harness = await startHarness({ worker: false, env: { PUBLIC_BASE_URL: publicBaseUrl } });
    ({ server, port } = await listen(harness));
  });
  afterAll(async () => {
    server.close();
    await harness.close();
  });

  test('an absolute-form target is refused with 400 and a warning, not a 503 and an error', async () => {
    harness.logs.splice(0);
    // A signed-looking webhook at an absolute URL: the signature check used to rebuild an invalid URL from it.
    const params = inboundWhatsappParams({
      accountSid: TEST_ACCOUNT_SID,
      from: 'whatsapp:+34600999000',
      to: TEST_SENDER,
      body: 'Hola',
      messageSid: newMessageSid(),
    });
    const { headers, body } = signedWebhook(TEST_AUTH_TOKEN, `${publicBaseUrl}/webhooks/whatsapp`, params);
    const headerLines = Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    const response = await rawRequest(
      port,
      `POST http://evil.example/webhooks/whatsapp HTTP/1.1\r\nHost: evil.example\r\n${headerLines}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    expect(response).toMatch(/^HTTP\/1\.1 400 /);
    expect(response).toContain('{"error":"the request target must be a path (origin-form), not an absolute URL"}');
    const plain = await rawRequest(port, 'GET http://evil.example/healthz HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n');
    expect(plain).toMatch(/^HTTP\/1\.1 400 /);
    expect(harness.logs.filter((line) => line.level === 'error')).toEqual([]);
    expect(harness.logs).toContainEqual(expect.objectContaining({ level: 'warn', event: 'request-rejected', reason: 'request-target-not-origin-form' }));
  });
});

describe('browser hardening headers', () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness({ worker: false });
  });
  afterAll(() => harness.close());

  test('widget.js, JSON answers and /demo say nosniff; /demo refuses to be framed; the widget script stays embeddable', async () => {
    // The script itself, not a redirect to it.
    const script = await harness.http.get('/widget.js');
    expect(script.status).toBe(200);
    expect(script.headers['content-type']).toMatch(/^application\/javascript/);
    expect(script.headers['x-content-type-options']).toBe('nosniff');
    // Loaded by <script src> from any customer site: no CORP or COEP that would block it there.
    expect(script.headers['access-control-allow-origin']).toBe('*');
    expect(script.headers['cross-origin-resource-policy']).toBeUndefined();

    for (const path of ['/healthz', '/api/widget/history', '/no-such-route']) {
      const json = await harness.http.get(path);
      expect([path, json.headers['content-type']]).toEqual([path, expect.stringMatching(/^application\/json/)]);
      expect([path, json.headers['x-content-type-options']]).toEqual([path, 'nosniff']);
    }

    const demo = await harness.http.get('/demo');
    expect(demo.status).toBe(200);
    expect(demo.headers['x-content-type-options']).toBe('nosniff');
    expect(demo.headers['x-frame-options']).toBe('DENY');
  });
});

describe('/metrics off the public port', () => {
  const token = 'metrics-token-for-tests-0123456789';

  test('by default the service port has no /metrics', async () => {
    const harness = await startHarness({ worker: false });
    try {
      const response = await harness.http.get('/metrics');
      expect(response.status).toBe(404);
      expect(response.text).not.toContain('_total');
    } finally {
      await harness.close();
    }
  });

  test('with METRICS_TOKEN the service port answers /metrics only to that bearer token', async () => {
    const harness = await startHarness({ worker: false, env: { METRICS_TOKEN: token } });
    try {
      harness.services.metrics.increment('probe_total');
      expect((await harness.http.get('/metrics')).status).toBe(401);
      expect((await harness.http.get('/metrics').set('Authorization', `Bearer ${token}x`)).status).toBe(401);
      expect((await harness.http.get('/metrics').set('Authorization', token)).status).toBe(401);
      const allowed = await harness.http.get('/metrics').set('Authorization', `Bearer ${token}`);
      expect(allowed.status).toBe(200);
      expect(allowed.text).toContain('probe_total 1');
      expect(harness.logs).toContainEqual(expect.objectContaining({ level: 'warn', event: 'request-rejected', status: 401, reason: 'metrics-token' }));
    } finally {
      await harness.close();
    }
  });

  test('with METRICS_PORT the process serves /metrics on loopback there, and the service port answers 404', async () => {
    const twilio = await startFakeTwilio({ accountSid: TEST_ACCOUNT_SID, authToken: TEST_AUTH_TOKEN });
    const [port, metricsPort] = [await findFreePort(), await findFreePort()];
    const child = spawn(process.execPath, [...RUN_TS, 'src/main.ts', 'web'], {
      env: { PATH: process.env.PATH ?? '', ...testEnv(twilio.baseUrl, { PORT: String(port), METRICS_PORT: String(metricsPort), METRICS_TOKEN: token }) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      await eventually(() => stdout.includes('"event":"server-listening"') && stdout.includes('"event":"metrics-listening"'), 20_000);
      expect(stdout).toContain(`"event":"metrics-listening","host":"127.0.0.1","port":${metricsPort}`);
      const publicPort = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      expect(publicPort.status).toBe(404);
      expect((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status).toBe(401);
      const scraped = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      expect(scraped.status).toBe(200);
      expect(scraped.headers.get('content-type')).toMatch(/^text\/plain/);
    } finally {
      child.kill('SIGTERM');
      await exited;
      await twilio.close();
    }
  }, 40_000);
});

describe('secrets in logs', () => {
  const apiKey = 'sk-live-echoed-0123456789abcdefABCDEF';
  let stub: OpenAIStub;
  let harness: Harness;
  beforeAll(async () => {
    stub = await startOpenAIStub();
    harness = await startHarness({ env: { OPENAI_BASE_URL: stub.baseUrl, OPENAI_API_KEY: apiKey }, useConfiguredModel: true });
  });
  afterAll(async () => {
    await harness.close();
    await stub.close();
  });

  test('a model server that echoes the API key in its error body never gets the key into a log line', async () => {
    // Like a proxy that quotes the credential it refused, in the message and in a nested field.
    stub.respondWith((_body, request) => ({
      status: 401,
      body: {
        error: {
          message: `Incorrect API key provided: ${request.headers.authorization}`,
          type: 'invalid_request_error',
          param: null,
          code: 'invalid_api_key',
          key: apiKey,
        },
      },
    }));
    await harness.sendWhatsapp({ from: 'whatsapp:+15005550123', body: 'hello?' });
    // A refused key is that provider's outage (issue 25): the turn fails and is retried, logged each step.
    await eventually(() => harness.logs.some((line) => line.event === 'route-fallback-failed') || undefined);
    await eventually(() => harness.logs.some((line) => line.event === 'inbound-retrying') || undefined);
    expect(harness.logs).toContainEqual(expect.objectContaining({ event: 'model-entry-failed' }));
    const output = JSON.stringify(harness.logs);
    expect(output).toContain('Incorrect API key provided: Bearer [redacted]');
    expect(output).not.toContain(apiKey);
    expect(output).not.toContain(apiKey.slice(0, 24));
  });
});

describe('redactSecrets', () => {
  test('replaces each secret wherever a logged string holds it: fields, arrays, error causes, child fields', () => {
    const lines: string[] = [];
    const secret = 'twilio-auth-token-0123456789abcdef';
    const logger = redactSecrets(createLogger({ level: 'debug', sink: (line) => lines.push(line) }), [secret, 'short', undefined]);
    const cause = new Error(`upstream said: token=${secret}`);
    logger.child({ url: `https://x.test/?t=${secret}` }).error('call-failed', {
      error: new Error('wrapped', { cause }),
      attempts: [{ body: `{"key":"${secret}"}` }],
      status: 401,
      short: 'short words stay',
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain(secret);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      event: 'call-failed',
      url: 'https://x.test/?t=[redacted]',
      error: { name: 'Error', message: 'wrapped', cause: { message: 'upstream said: token=[redacted]' } },
      attempts: [{ body: '{"key":"[redacted]"}' }],
      status: 401,
      short: 'short words stay',
    });
  });
});

describe('configuredSecrets', () => {
  test('names every secret of the configuration, derived ones and connection-URL passwords included', () => {
    const config = loadConfig(
      testEnv('http://127.0.0.1:1', {
        OPENAI_API_KEY: 'sk-openai-0123456789',
        MCP_SERVER_URL: 'http://127.0.0.1:2/mcp',
        MCP_AUTH_TOKEN: 'mcp-token-0123456789',
        ADMIN_TOKEN: 'admin-token-0123456789abcdef',
        METRICS_TOKEN: 'metrics-token-0123456789abcd',
        REDIS_URL: 'redis://:redis-p%40ssword-1@127.0.0.1:6379',
        MONGODB_URI: 'mongodb://app:mongo-password-1@127.0.0.1:27017/db',
        WEB_SITES: JSON.stringify([{ key: 'shop', name: 'Shop', origins: ['https://shop.example'], identitySecret: 'site-identity-secret-0123456789abcdef' }]),
      }),
    );
    expect(configuredSecrets(config)).toEqual(
      expect.arrayContaining([
        'sk-openai-0123456789',
        TEST_AUTH_TOKEN,
        'mcp-token-0123456789',
        'admin-token-0123456789abcdef',
        'metrics-token-0123456789abcd',
        config.web.tokenSecret,
        config.transcriptLinks.secret,
        'redis-p%40ssword-1',
        'redis-p@ssword-1',
        'mongo-password-1',
        'site-identity-secret-0123456789abcdef',
      ]),
    );
  });
});
