/**
 * The service as a process: configuration errors stop it with one line naming the variable,
 * and SIGTERM lets an in-flight turn finish, closes connections and exits 0.
 */
import { spawn } from 'node:child_process';
import { describe, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/errors/index.js';
import { QUEUE_PREFIX } from '../../src/redis.js';
import { startFakeTwilio } from '../support/fake-twilio.js';
import { eventually, ownRedisDatabase, PUBLIC_BASE_URL, TEST_ACCOUNT_SID, TEST_AUTH_TOKEN, TEST_SENDER, testEnv } from '../support/harness.js';
import { startOpenAIStub } from '../support/openai-stub.js';
import { findFreePort } from '../support/services.js';
import { inboundWhatsappParams, newTwilioSid, signedWebhook } from '../support/twilio-signature.js';
import { RUN_TS } from '../support/run-ts.js';

function runMain(env: Record<string, string>) {
  const child = spawn(process.execPath, [...RUN_TS, 'src/main.ts', 'all'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output, exit };
}

describe('configuration', () => {
  test('missing and invalid variables are named, one line, with what they expect', () => {
    const attempt = () => loadConfig({ PUBLIC_BASE_URL: 'ftp://nope', TWILIO_WHATSAPP_FROM: '+1555', OPENAI_API_KEY: 'k' });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(
      'invalid configuration: PUBLIC_BASE_URL: expected an http(s) URL; TWILIO_WHATSAPP_FROM: expected the WhatsApp sender as whatsapp:+<E.164 number>; ' +
        'TWILIO_ACCOUNT_SID: is required with TWILIO_WHATSAPP_FROM (WhatsApp needs all three TWILIO_* variables; set none to run the widget alone); ' +
        'TWILIO_AUTH_TOKEN: is required with TWILIO_WHATSAPP_FROM (WhatsApp needs all three TWILIO_* variables; set none to run the widget alone)',
    );
  });

  test('defaults fill the optional variables', () => {
    const config = loadConfig(testEnv('http://127.0.0.1:1'));
    expect(config.model).toMatchObject({
      fast: [{ provider: 'openai', modelId: 'gpt-5-mini' }],
      smart: [{ provider: 'openai', modelId: 'gpt-5' }],
      vision: [],
      holdingNoticeMs: 20_000,
      maxSteps: 5,
      maxOutputTokens: 1024,
    });
    expect(config.trustProxy).toBe(false);
  });

  test('the process exits 1 with one line on stderr when a variable is missing', async () => {
    const { output, exit } = runMain({ PUBLIC_BASE_URL, OPENAI_API_KEY: 'k', TWILIO_ACCOUNT_SID: TEST_ACCOUNT_SID, TWILIO_AUTH_TOKEN: TEST_AUTH_TOKEN });
    expect(await exit).toBe(1);
    expect(output.stderr).toBe(
      'invalid configuration: TWILIO_WHATSAPP_FROM: is required with TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN (WhatsApp needs all three TWILIO_* variables; set none to run the widget alone)\n',
    );
  });
});

describe('SIGTERM', () => {
  test('an in-flight turn finishes and is delivered, then the process exits 0', async () => {
    const twilio = await startFakeTwilio({ accountSid: TEST_ACCOUNT_SID, authToken: TEST_AUTH_TOKEN });
    const stub = await startOpenAIStub();
    stub.respondWith({ text: 'Finished despite the shutdown.', delayMs: 1500 });
    const port = await findFreePort();
    const { child, output, exit } = runMain({
      ...testEnv(twilio.baseUrl, { OPENAI_BASE_URL: stub.baseUrl, PORT: String(port), LOG_LEVEL: 'info', ...ownRedisDatabase(1) }),
    });
    try {
      await eventually(() => output.stdout.includes('"event":"worker-started"') && output.stdout.includes('"event":"server-listening"'), 20_000);
      const params = inboundWhatsappParams({
        accountSid: TEST_ACCOUNT_SID,
        from: 'whatsapp:+447700900200',
        to: TEST_SENDER,
        body: 'bye',
        messageSid: newTwilioSid(),
      });
      const response = await fetch(`http://127.0.0.1:${port}/webhooks/whatsapp`, {
        method: 'POST',
        ...signedWebhook(TEST_AUTH_TOKEN, `${PUBLIC_BASE_URL}/webhooks/whatsapp`, params),
      });
      expect(response.status).toBe(200);
      // A widget visitor holds an open event stream: it must not keep the process alive.
      const session = await fetch(`http://127.0.0.1:${port}/api/widget/session`, {
        method: 'POST',
        headers: { origin: PUBLIC_BASE_URL, 'content-type': 'application/json' },
        body: JSON.stringify({ siteKey: 'demo' }),
      });
      const { token } = (await session.json()) as { token: string };
      const stream = await fetch(`http://127.0.0.1:${port}/api/widget/events?token=${encodeURIComponent(token)}`, { headers: { origin: PUBLIC_BASE_URL } });
      expect(stream.status).toBe(200);
      const streamEnded = stream.text();
      await eventually(() => stub.requests.length >= 1 || undefined, 10_000);
      child.kill('SIGTERM');
      await streamEnded;
      expect(await exit).toBe(0);
      expect(twilio.messages.map((message) => message.body)).toEqual(['Finished despite the shutdown.']);
      expect(output.stdout).toContain('"event":"shutdown-complete"');
      // Every queue's keys carry the BullMQ prefix's hash tag (a cluster refuses a script over
      // keys of several slots): production's default prefix, not BullMQ's own `bull`.
      const own = ownRedisDatabase(1).REDIS_URL;
      const redis = own ? new Redis(own) : undefined;
      try {
        const queueKeys = ((await redis?.keys('*')) ?? [`${QUEUE_PREFIX}:takeover-idle:on-a-cluster`]).filter((key) =>
          /(^|:)(turns|handoff-notices|takeover-idle|maintenance):/.test(key),
        );
        expect(queueKeys.some((key) => key.includes(':takeover-idle:'))).toBe(true);
        expect(queueKeys.filter((key) => !key.startsWith(`${QUEUE_PREFIX}:`))).toEqual([]);
      } finally {
        redis?.disconnect();
      }
    } finally {
      child.kill('SIGKILL');
      await twilio.close();
      await stub.close();
    }
  });
});
