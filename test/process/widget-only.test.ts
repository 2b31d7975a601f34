/**
 * A channel is switched on by its own configuration: a business without a Twilio account runs
 * the widget alone (no WhatsApp routes, a start-up line naming the channels that are on), and a
 * partial Twilio account, or teammates' WhatsApp numbers with WhatsApp off, stop start-up with
 * one line naming what is wrong.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { loadConfig } from '../../src/config.js';
import { eventually, ownRedisDatabase, PUBLIC_BASE_URL, startServiceProcess, testEnv, type ServiceProcess } from '../support/harness.js';
import { startOpenAIStub } from '../support/openai-stub.js';
import { findFreePort } from '../support/services.js';
import { RUN_TS } from '../support/run-ts.js';

const WIDGET_TOKEN_SECRET = 'w'.repeat(40);

/** The test environment with no TWILIO_* variable at all. */
function widgetOnlyEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env = testEnv('http://127.0.0.1:9', { WIDGET_TOKEN_SECRET, ...ownRedisDatabase(2) });
  for (const name of ['TWILIO_ACCOUNT_SID', 'TWILIO_AUTH_TOKEN', 'TWILIO_WHATSAPP_FROM', 'TWILIO_API_BASE_URL']) delete env[name];
  return { ...env, ...extra };
}

/** Runs `src/main.ts all` to its exit; what it wrote to stderr. */
async function startUpFailure(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [...RUN_TS, 'src/main.ts', 'all'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  // A service that starts after all must not outlive the test run.
  const killOnExit = () => void child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  process.removeListener('exit', killOnExit);
  return { code, stderr };
}

describe('a widget-only site (no TWILIO_* variables)', () => {
  let service: ServiceProcess;
  let stub: Awaited<ReturnType<typeof startOpenAIStub>>;
  let base: string;

  beforeAll(async () => {
    stub = await startOpenAIStub();
    stub.respondWith({ text: 'Hello from the widget-only service.' });
    const port = await findFreePort();
    base = `http://127.0.0.1:${port}`;
    service = await startServiceProcess(widgetOnlyEnv({ OPENAI_BASE_URL: stub.baseUrl, PORT: String(port) }));
  }, 60_000);

  afterAll(async () => {
    await service.kill();
    await stub.close();
  });

  test('the start-up log says only the widget is on', () => {
    const lines = service
      .output()
      .split('\n')
      .filter((line) => line.includes('"event":"channels-enabled"'))
      .map((line) => JSON.parse(line) as { channels: string[] });
    expect(lines).toEqual([expect.objectContaining({ channels: ['web'] })]);
  });

  test('the WhatsApp webhooks do not exist', async () => {
    for (const path of ['/webhooks/whatsapp', '/webhooks/whatsapp/status']) {
      const response = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'Body=hi' });
      expect(response.status).toBe(404);
    }
  });

  test('a widget visitor gets an answer', async () => {
    const session = await fetch(`${base}/api/widget/session`, {
      method: 'POST',
      headers: { origin: PUBLIC_BASE_URL, 'content-type': 'application/json' },
      body: JSON.stringify({ siteKey: 'demo' }),
    });
    expect(session.status).toBe(200);
    const { token } = (await session.json()) as { token: string };
    const headers = { origin: PUBLIC_BASE_URL, authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const posted = await fetch(`${base}/api/widget/messages`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ clientMessageId: randomUUID(), text: 'Do you open on Sundays?' }),
    });
    expect(posted.status).toBe(202);
    const reply = await eventually(async () => {
      const history = (await (await fetch(`${base}/api/widget/history`, { headers })).json()) as { messages: { role: string; text: string }[] };
      return history.messages.find((message) => message.role === 'assistant');
    }, 20_000);
    expect(reply.text).toBe('Hello from the widget-only service.');
  });
});

describe('channel configuration that stops start-up', () => {
  test('a partial Twilio account names each missing variable', async () => {
    const env = widgetOnlyEnv({ TWILIO_ACCOUNT_SID: `AC${'a1'.repeat(16)}`, TWILIO_AUTH_TOKEN: '0123456789abcdef0123456789abcdef' });
    const { code, stderr } = await startUpFailure(env);
    expect(code).toBe(1);
    expect(stderr).toBe(
      'invalid configuration: TWILIO_WHATSAPP_FROM: is required with TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN (WhatsApp needs all three TWILIO_* variables; set none to run the widget alone)\n',
    );
  });

  test('without a Twilio token to derive it from, the widget needs its own secret', () => {
    const env = widgetOnlyEnv();
    delete env.WIDGET_TOKEN_SECRET;
    expect(() => loadConfig(env)).toThrow(
      'invalid configuration: WIDGET_TOKEN_SECRET: is required without TWILIO_AUTH_TOKEN to derive it from (at least 32 random characters, e.g. openssl rand -hex 32)',
    );
  });

  test('teammates on WhatsApp while WhatsApp is off: refused, naming the team', async () => {
    const teams = {
      sales: { label: 'Sales', whatsapp: ['whatsapp:+447700900123'] },
      support: { label: 'Support', webhooks: ['https://hooks.example.test/support'] },
    };
    const { code, stderr } = await startUpFailure(widgetOnlyEnv({ HANDOFF_TEAMS: JSON.stringify(teams) }));
    expect(code).toBe(1);
    expect(stderr).toBe(
      'invalid configuration: HANDOFF_TEAMS: sales lists WhatsApp numbers, but WhatsApp is off (set TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN and TWILIO_WHATSAPP_FROM, or list webhooks only)\n',
    );
  });

  test('no channel at all (no Twilio account, WEB_SITES=[]) is refused', async () => {
    const { code, stderr } = await startUpFailure(widgetOnlyEnv({ WEB_SITES: '[]' }));
    expect(code).toBe(1);
    expect(stderr).toBe(
      'invalid configuration: no channel is on: set TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN and TWILIO_WHATSAPP_FROM for WhatsApp, or list a site in WEB_SITES for the widget\n',
    );
  });
});
