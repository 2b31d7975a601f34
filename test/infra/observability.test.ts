/**
 * Observability as an operator sees it: pino lines (the `event` field, secrets censored by field
 * path and by value), prom-client's /metrics after a turn (latency histograms, token counters),
 * the per-turn metering summed in the admin API, and the queue dashboard behind ADMIN_TOKEN.
 */
import { tracingChannel } from 'node:diagnostics_channel';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import express from 'express';
import request from 'supertest';
import { createQueueDashboard } from '../../src/admin/queue-dashboard.js';
import { loadConfig } from '../../src/config.js';
import { createLogger, redactSecrets, type LogLevel } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { eventually, startHarness, testEnv, type Harness } from '../support/harness.js';
import { turnsSettled } from '../support/settled.js';
import { startOpenAIStub, type StubReply } from '../support/openai-stub.js';
import { stubAssistant } from '../support/stub-assistant.js';

const ADMIN_TOKEN = 'admin-token-for-observability-0123';
const METRICS_TOKEN = 'metrics-token-for-observability-01';

describe('pino logs', () => {
  test('one JSON line per call with the event, its level and time; child fields carried; below the level dropped', () => {
    const lines: { line: string; level: LogLevel }[] = [];
    const logger = createLogger({ level: 'info', sink: (line, level) => lines.push({ line, level }) });
    logger.debug('not-shown');
    logger.child({ runId: 'r1' }).warn('turn-slow', { ms: 1200 });
    expect(lines).toHaveLength(1);
    expect(lines[0]?.level).toBe('warn');
    expect(lines[0]?.line).not.toContain('\n');
    const record = JSON.parse(lines[0]!.line) as Record<string, unknown>;
    expect(record).toMatchObject({ level: 'warn', event: 'turn-slow', runId: 'r1', ms: 1200 });
    expect(new Date(String(record.time)).toISOString()).toBe(record.time);
  });

  test("a grandchild's line carries every ancestor's fields, censored by path, though no ancestor wrote a line", () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'info', sink: (line) => lines.push(line) });
    const job = logger.child({ jobId: 'j1', token: 'visitor-token-abc' });
    const turn = job.child({ runId: 'r1' });
    turn.debug('not-shown');
    expect(turn.enabled('debug')).toBe(false);
    expect(turn.enabled('info')).toBe(true);
    turn.info('turn-answered', { ms: 3 });
    job.info('job-done');
    expect(lines.map((line) => JSON.parse(line) as Record<string, unknown>)).toEqual([
      expect.objectContaining({ event: 'turn-answered', jobId: 'j1', token: '[redacted]', runId: 'r1', ms: 3 }),
      expect.objectContaining({ event: 'job-done', jobId: 'j1', token: '[redacted]' }),
    ]);
    expect(lines[0]).not.toContain('visitor-token-abc');
  });

  test('credential fields are censored by path, and a configured secret inside an error by value', () => {
    const lines: string[] = [];
    const secret = 'sk-live-secret-0123456789abcdef';
    const logger = redactSecrets(createLogger({ level: 'debug', sink: (line) => lines.push(line) }), [secret]);
    logger.error('upstream-failed', {
      request: { headers: { authorization: 'Bearer not-a-configured-secret', accept: 'application/json' } },
      token: 'visitor-token-abc',
      error: new Error(`401 from upstream: key ${secret} refused`),
    });
    const record = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(record).toMatchObject({
      event: 'upstream-failed',
      request: { headers: { authorization: '[redacted]', accept: 'application/json' } },
      token: '[redacted]',
      error: { name: 'Error', message: '401 from upstream: key [redacted] refused' },
    });
    expect(lines[0]).not.toContain(secret);
    expect(lines[0]).not.toContain('not-a-configured-secret');
  });
});

describe('prom-client metrics', () => {
  test('a counter keeps its series when a call site adds a label, and each service has its own registry', async () => {
    const metrics = createMetrics();
    const other = createMetrics();
    metrics.increment('things_total', { kind: 'a' });
    metrics.increment('things_total', { kind: 'a', outcome: 'ok' }, 2);
    other.increment('things_total', { kind: 'a' }, 5);
    expect(metrics.value('things_total', { kind: 'a' })).toBe(1);
    expect(metrics.value('things_total', { outcome: 'ok', kind: 'a' })).toBe(2);
    const text = await metrics.render();
    expect(text).toContain('things_total{kind="a"} 1');
    expect(text).toContain('things_total{kind="a",outcome="ok"} 2');
    expect(await other.render()).toContain('things_total{kind="a"} 5');
  });
});

describe('MODEL_PRICES', () => {
  test('is JSON of model → prices per million tokens; anything else stops start-up naming it', () => {
    const env = (value: string) => testEnv('http://127.0.0.1:1', { MODEL_PRICES: value });
    expect(loadConfig(env('{"gpt-5-mini":{"inputPerMTok":0.25,"outputPerMTok":2}}')).model.prices).toEqual({
      'gpt-5-mini': { inputPerMTok: 0.25, outputPerMTok: 2 },
    });
    expect(loadConfig(testEnv('http://127.0.0.1:1')).model.prices).toBeUndefined();
    expect(() => loadConfig(env('{"gpt-5-mini":{"inputPerMTok":-1,"outputPerMTok":2}}'))).toThrow(
      /^invalid configuration: MODEL_PRICES\.gpt-5-mini\.inputPerMTok: /,
    );
    expect(() => loadConfig(env('gpt-5-mini=0.25'))).toThrow('invalid configuration: MODEL_PRICES: expected JSON');
  });
});

/** `name{labels} value` from Prometheus text, or undefined when the series is absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((entry) => entry.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('a turn, metered', () => {
  let harness: Harness;
  const today = new Date().toISOString().slice(0, 10);
  beforeAll(async () => {
    harness = await startHarness({
      env: {
        ADMIN_TOKEN,
        METRICS_TOKEN,
        // Cost per million tokens: 1 per input token and 2 per output token, for round numbers.
        MODEL_PRICES: JSON.stringify({ 'deterministic-fast': { inputPerMTok: 1_000_000, outputPerMTok: 2_000_000 } }),
      },
      script: ({ userText }) => ({ text: `You said: ${userText}` }),
    });
  });
  afterAll(() => harness.close());

  const usage = () => harness.http.get(`/admin/usage?from=${today}&to=${today}`).set('Authorization', `Bearer ${ADMIN_TOKEN}`);

  test('two turns: the histograms have counts, tokens are counted, and the admin API sums them per day, role and channel with cost', async () => {
    const customer = 'whatsapp:+447700900301';
    await harness.sendWhatsapp({ from: customer, body: 'What does the pro plan cost?' });
    await harness.twilio.waitForMessages(1);
    // The first turn let the conversation go: the second message gets a job (and a queue wait) of its own.
    await turnsSettled(harness.services);
    await harness.sendWhatsapp({ from: customer, body: 'And the price per seat?' });
    await harness.twilio.waitForMessages(2);

    // Each turn is two calls on the deterministic fast model (judge, reply), 10 tokens in and 10 out each.
    const summed = await eventually(async () => {
      const response = await usage();
      return response.body.total?.calls === 4 ? response : undefined;
    });
    expect(summed.status).toBe(200);
    expect(summed.body).toEqual({
      from: today,
      to: today,
      rows: [
        {
          day: today,
          roleId: 'sales',
          channelId: 'whatsapp',
          calls: 4,
          inputTokens: 40,
          outputTokens: 40,
          cost: 120,
          models: [{ model: 'deterministic-fast', calls: 4, inputTokens: 40, outputTokens: 40, cost: 120 }],
        },
      ],
      total: { calls: 4, inputTokens: 40, outputTokens: 40, cost: 120 },
    });

    const scraped = await harness.http.get('/metrics').set('Authorization', `Bearer ${METRICS_TOKEN}`);
    expect(scraped.status).toBe(200);
    expect(scraped.type).toBe('text/plain');
    const text = scraped.text;
    expect(text).toContain('# TYPE turn_duration_seconds histogram');
    expect(sample(text, 'turn_duration_seconds_count{channel="whatsapp",outcome="answered"}')).toBe(2);
    expect(sample(text, 'model_call_duration_seconds_count{tier="fast",purpose="judge",outcome="ok"}')).toBe(2);
    expect(sample(text, 'model_call_duration_seconds_count{tier="fast",purpose="reply",outcome="ok"}')).toBe(2);
    expect(sample(text, 'webhook_ack_seconds_count{channel="whatsapp",status="200"}')).toBe(2);
    expect(sample(text, 'queue_wait_seconds_count{queue="turns"}')).toBe(2);
    expect(sample(text, 'send_duration_seconds_count{channel="whatsapp",outcome="sent"}')).toBe(2);
    expect(sample(text, 'model_tokens_total{tier="fast",model="deterministic-fast",kind="input"}')).toBe(40);
    expect(sample(text, 'model_tokens_total{tier="fast",model="deterministic-fast",kind="output"}')).toBe(40);
    // Counters from every call site still render, with their labels.
    expect(sample(text, 'model_calls_total{purpose="reply"}')).toBe(2);
  });

  test('the usage report refuses a bad range with a 400 and the reason, and needs the token', async () => {
    const bad = await harness.http.get('/admin/usage?from=2026-02-30x&to=2026-01-01').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(bad.status).toBe(400);
    expect(bad.body.issues).toEqual([{ path: 'from', message: expect.any(String) }]);
    const reversed = await harness.http.get('/admin/usage?from=2026-02-01&to=2026-01-01').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(reversed.status).toBe(400);
    expect(reversed.body.issues).toEqual([{ path: 'from', message: 'from must not be after to' }]);
    expect(harness.logs.some((line) => line.event === 'admin-request-rejected' && line.reason === 'invalid_request')).toBe(true);
    expect((await harness.http.get(`/admin/usage?from=${today}`)).status).toBe(401);
    const empty = await harness.http.get('/admin/usage?from=2020-01-01&to=2020-01-31').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(empty.body).toEqual({ from: '2020-01-01', to: '2020-01-31', rows: [], total: { calls: 0, inputTokens: 0, outputTokens: 0, cost: 0 } });
  });

  test('the queue dashboard: 401 without the token, the turns and notices queues with it, and a page that loads nothing from outside', async () => {
    const anonymous = await harness.http.get('/admin/queues');
    expect(anonymous.status).toBe(401);
    expect((await harness.http.get('/admin/queues/api/queues').set('Authorization', 'Bearer wrong-token-0123456789abcdef')).status).toBe(401);

    const page = await harness.http.get('/admin/queues').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(page.status).toBe(200);
    expect(page.type).toBe('text/html');
    expect(page.text).toContain('<div id="root">');
    expect(page.text).not.toMatch(/(href|src)="https?:\/\//);
    expect(page.headers['content-security-policy']).toContain("default-src 'self'");
    const script = /<script defer src="([^"]+)"/.exec(page.text)?.[1];
    expect(script).toBeDefined();
    const asset = await harness.http.get(`/admin/queues/${script}`).set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(asset.status).toBe(200);

    const api = await harness.http.get('/admin/queues/api/queues').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(api.status).toBe(200);
    const queues = (api.body as { queues: { name: string; readOnlyMode: boolean }[] }).queues;
    expect(queues.map((queue) => queue.name).sort()).toEqual(['handoff-notices', 'turns']);
    expect(queues.every((queue) => queue.readOnlyMode)).toBe(true);
  });

  test('the dashboard checks the token itself, not only behind the admin router', async () => {
    const { logger, metrics, queue } = harness.services;
    const alone = request(express().use(createQueueDashboard({ adminToken: ADMIN_TOKEN, queues: [queue], logger, metrics })));
    expect((await alone.get('/admin/queues/api/queues')).status).toBe(401);
    expect((await alone.get('/admin/queues/api/queues').set('Authorization', `Bearer ${ADMIN_TOKEN}x`)).status).toBe(401);
    const allowed = await alone.get('/admin/queues/api/queues').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(allowed.status).toBe(200);
    expect((allowed.body as { queues: { name: string }[] }).queues.map((entry) => entry.name)).toEqual(['turns']);
  });
});

describe('metering through the real OpenAI provider', () => {
  test('the tokens the model endpoint reports are what the admin API sums, per model', async () => {
    const stub = await startOpenAIStub();
    // The judge's structured call and the reply report different, exact usage.
    stub.respondWith((body): StubReply => {
      const reply = stubAssistant(body);
      if ('json' in reply) return { ...reply, usage: { promptTokens: 321, completionTokens: 17 } };
      if ('text' in reply) return { ...reply, usage: { promptTokens: 1000, completionTokens: 55 } };
      return reply;
    });
    const harness = await startHarness({ useConfiguredModel: true, env: { OPENAI_BASE_URL: stub.baseUrl, ADMIN_TOKEN } });
    try {
      const customer = 'whatsapp:+447700900302';
      await harness.sendWhatsapp({ from: customer, body: 'how do I export my data?' });
      await harness.twilio.waitForMessages(1);
      await harness.sendWhatsapp({ from: customer, body: 'how do I change my email?' });
      await harness.twilio.waitForMessages(2);
      const today = new Date().toISOString().slice(0, 10);
      const summed = await eventually(async () => {
        const response = await harness.http.get(`/admin/usage?to=${today}`).set('Authorization', `Bearer ${ADMIN_TOKEN}`);
        return response.body.total?.calls === 4 ? response.body : undefined;
      });
      expect(summed.rows).toEqual([
        {
          day: today,
          roleId: 'support',
          channelId: 'whatsapp',
          calls: 4,
          inputTokens: 2 * (321 + 1000),
          outputTokens: 2 * (17 + 55),
          models: [{ model: 'gpt-5-mini', calls: 4, inputTokens: 2642, outputTokens: 144 }],
        },
      ]);
    } finally {
      await harness.close();
      await stub.close();
    }
  });
});

describe("the AI SDK's telemetry", () => {
  test('is off: a subscriber to its tracing channel sees nothing of a turn (judge and reply)', async () => {
    const seen: unknown[] = [];
    const channel = tracingChannel('ai:telemetry');
    const record = (message: unknown) => seen.push(message);
    const subscribers = { start: record, end: record, asyncStart: record, asyncEnd: record, error: record };
    channel.subscribe(subscribers);
    const harness = await startHarness();
    try {
      await harness.sendWhatsapp({ from: 'whatsapp:+447700900303', body: 'how do I export my data?' });
      await harness.twilio.waitForMessages(1);
      await turnsSettled(harness.services);
      expect(harness.models.calls.length).toBeGreaterThanOrEqual(2);
      expect(seen).toEqual([]);
    } finally {
      channel.unsubscribe(subscribers);
      await harness.close();
    }
  });
});

describe('the queue dashboard without ADMIN_TOKEN', () => {
  test('does not exist', async () => {
    const harness = await startHarness({ worker: false });
    try {
      expect((await harness.http.get('/admin/queues')).status).toBe(404);
      expect((await harness.http.get('/admin/queues/api/queues').set('Authorization', `Bearer ${ADMIN_TOKEN}`)).status).toBe(404);
    } finally {
      await harness.close();
    }
  });
});
