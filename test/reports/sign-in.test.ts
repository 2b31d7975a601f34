/**
 * The reports page's sign-in on real Redis: attempts are limited per address (the 11th wrong
 * token in the window is a 429 with Retry-After and a `reports-sign-in-limited` line, before the
 * token is even compared; a burst in parallel gets no more); signing out ends the session on the
 * server (the same cookie opens neither the page nor the JSON after); a changed ADMIN_TOKEN ends
 * every session; with Redis down, signing in (and a session's page) is a clear 503, logged, never a 500.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import express from 'express';
import { Redis } from 'ioredis';
import request from 'supertest';
import { createReportsFeature, type ReportsFeature } from '../../src/reports/index.js';
import { createReportsRouter } from '../../src/reports/router.js';
import { startHarness, type Harness } from '../support/harness.js';

const TOKEN = 'reports-sign-in-token-0123456789abcdef';
const NEW_TOKEN = 'reports-sign-in-token-rotated-0123456789';

let harness: Harness;
const features: ReportsFeature[] = [];

/** The reports routes with `token` as ADMIN_TOKEN, over the harness's Redis and MongoDB. */
function reportsWith(token: string, trustProxy = false) {
  const { mongo, redis, logger, metrics } = harness.services;
  const reports = createReportsFeature({
    connection: mongo,
    redis,
    logger,
    metrics,
    config: { adminToken: token, publicBaseUrl: 'http://127.0.0.1', channels: ['whatsapp'], prices: undefined },
    today: () => '2026-11-20',
  });
  features.push(reports);
  const app = express();
  app.set('trust proxy', trustProxy);
  app.use(reports.router);
  return request(app);
}

const signIn = async (http: ReturnType<typeof request>, token = TOKEN, from?: string) => {
  const response = await http
    .post('/admin/reports/sign-in')
    .set(from ? { 'X-Forwarded-For': from } : {})
    .type('form')
    .send({ token });
  return { response, cookie: String(response.headers['set-cookie'] ?? '').split(';')[0] ?? '' };
};

beforeAll(async () => {
  harness = await startHarness({ worker: false });
}, 60_000);

afterAll(async () => {
  for (const reports of features) await reports.close();
  await harness?.close();
});

describe('sign-in', () => {
  test('attempts are limited per address: past 10 wrong tokens, a 429 with Retry-After and a log line, even for the right token', async () => {
    const http = reportsWith(TOKEN, true);
    const address = '203.0.113.7';
    // A burst in parallel gets no more attempts than a slow one.
    const burst = await Promise.all(Array.from({ length: 15 }, () => signIn(http, 'wrong-token-wrong-token', address)));
    expect(burst.map(({ response }) => response.status).sort()).toEqual([...Array(10).fill(401), ...Array(5).fill(429)]);
    const limited = await signIn(http, TOKEN, address);
    expect(limited.response.status).toBe(429);
    expect(Number(limited.response.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.response.headers['set-cookie']).toBeUndefined();
    expect(limited.response.text).toContain('Too many sign-in attempts from your address.');
    const lines = harness.logs.filter((line) => line.event === 'reports-sign-in-limited');
    expect(lines).toHaveLength(6);
    expect(lines[0]).toMatchObject({ address: harness.logId(address) });
    expect(harness.logs.filter((line) => line.event === 'reports-request-rejected' && line.status === 401)).toHaveLength(10);
    // Another address is not held back by it.
    expect((await signIn(http, TOKEN, '203.0.113.8')).response.status).toBe(303);
  });

  test('the right token within the limit clears the count', async () => {
    const http = reportsWith(TOKEN, true);
    const address = '203.0.113.9';
    for (let attempt = 0; attempt < 9; attempt += 1) expect((await signIn(http, 'wrong-token-wrong-token', address)).response.status).toBe(401);
    expect((await signIn(http, TOKEN, address)).response.status).toBe(303);
    for (let attempt = 0; attempt < 10; attempt += 1) expect((await signIn(http, 'wrong-token-wrong-token', address)).response.status).toBe(401);
  });

  test('signing out ends the session on the server: the same cookie opens nothing after', async () => {
    const http = reportsWith(TOKEN);
    const { cookie } = await signIn(http);
    expect((await http.get('/admin/reports').set('Cookie', cookie)).status).toBe(200);
    expect((await http.get('/admin/reports/summary').set('Cookie', cookie)).status).toBe(200);
    const out = await http.post('/admin/reports/sign-out').set('Cookie', cookie);
    expect(out.status).toBe(303);
    expect(out.headers.location).toBe('/admin/reports/sign-in');
    expect(String(out.headers['set-cookie'])).toMatch(/^wa_reports=; Path=\/admin\/reports; HttpOnly; SameSite=Strict; Max-Age=0$/);
    // A copy of the cookie kept by the browser (or anyone) is no session any more.
    const page = await http.get('/admin/reports').set('Cookie', cookie);
    expect(page.status).toBe(303);
    expect(page.headers.location).toBe('/admin/reports/sign-in');
    expect((await http.get('/admin/reports/summary').set('Cookie', cookie)).status).toBe(401);
    expect((await http.get('/admin/reports/csv/daily.csv').set('Cookie', cookie)).status).toBe(401);
  });

  test('a preset asked for before signing in is shown after it', async () => {
    const http = reportsWith(TOKEN);
    const form = await http.get('/admin/reports/sign-in?preset=last-7-days&channel=whatsapp');
    expect(form.text).toContain('<input type="hidden" name="channel" value="whatsapp"><input type="hidden" name="preset" value="last-7-days">');
    const response = await http.post('/admin/reports/sign-in').type('form').send({ token: TOKEN, channel: 'whatsapp', preset: 'last-7-days' });
    expect(response.status).toBe(303);
    expect(response.headers.location).toBe('/admin/reports?channel=whatsapp&preset=last-7-days');
  });

  test('a changed ADMIN_TOKEN ends every session', async () => {
    const { cookie } = await signIn(reportsWith(TOKEN));
    const rotated = reportsWith(NEW_TOKEN);
    expect((await rotated.get('/admin/reports/summary').set('Cookie', cookie)).status).toBe(401);
    const fresh = await signIn(rotated, NEW_TOKEN);
    expect((await rotated.get('/admin/reports/summary').set('Cookie', fresh.cookie)).status).toBe(200);
  });

  test('with Redis down, signing in is a 503 saying so, logged, never a 500', async () => {
    // A Redis that is down (nothing listens on its port): every command fails at once.
    const down = new Redis({ host: '127.0.0.1', port: 1, lazyConnect: true, enableOfflineQueue: false, retryStrategy: () => null });
    await down.connect().catch(() => undefined);
    try {
      // The figures' store is up; the sessions' and attempts' Redis is not.
      const { logger, metrics } = harness.services;
      const app = express();
      reportsWith(TOKEN);
      const store = features.at(-1)?.store;
      if (!store) throw new Error('no reports feature');
      app.use(
        '/admin/reports',
        createReportsRouter({ adminToken: TOKEN, secureCookies: false, channels: () => ['whatsapp'], prices: undefined, store, redis: down, logger, metrics }),
      );
      const http = request(app);
      const before = harness.logs.filter((line) => line.event === 'reports-session-failed').length;
      const response = await http.post('/admin/reports/sign-in').set('Connection', 'close').type('form').send({ token: TOKEN });
      const cookie = response.headers['set-cookie'];
      expect(response.status).toBe(503);
      expect(response.type).toBe('text/html');
      expect(response.text).toContain('Signing in is not possible right now (storage unavailable). Try again shortly.');
      expect(cookie).toBeUndefined();
      // A session's page and the JSON say the same.
      expect((await http.get('/admin/reports').set('Cookie', `wa_reports=v2.${'a'.repeat(43)}`)).status).toBe(503);
      const json = await http.get('/admin/reports/summary').set('Cookie', `wa_reports=v2.${'a'.repeat(43)}`);
      expect(json.status).toBe(503);
      expect(json.body).toEqual({ error: 'storage unavailable' });
      const lines = harness.logs.filter((line) => line.event === 'reports-session-failed').slice(before);
      expect(lines).toHaveLength(3);
      expect(lines[0]).toMatchObject({ level: 'error' });
    } finally {
      down.disconnect();
    }
  });
});
