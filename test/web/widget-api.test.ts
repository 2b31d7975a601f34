/**
 * The widget's API as a browser and an attacker see it: sessions bound to a site's origins,
 * tokens, size and rate limits, duplicate client message ids, the SSE stream (typing, deltas,
 * complete message) and a reconnect to another web process that resumes without loss or repeats.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createServices, type Services } from '../../src/composition-root.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { createVisitorTokens } from '../../channels/web/visitor-token.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { turnsSettled } from '../support/settled.js';
import { collectSse, openSse, type SseEvent } from '../support/sse.js';

const SHOP = 'https://shop.example.test';
const SITES = JSON.stringify([
  { key: 'test-site', name: 'Harbour Lane', origins: [SHOP], greeting: 'Hi! How can I help?', accentColor: '#0b7285', language: 'en' },
  { key: 'other-site', name: 'Other', origins: ['https://other.example.test'] },
]);

let harness: Harness;
let server: Server;
let base: string;
beforeAll(async () => {
  harness = await startHarness({
    env: { WEB_SITES: SITES, WEB_VISITOR_MESSAGES_PER_MINUTE: '5', WEB_MAX_MESSAGE_CHARS: '200' },
    script: () => ({ text: 'Our opening hours are nine to five, Monday to Friday.' }),
  });
  server = harness.services.app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.close();
  await harness.close();
});

async function session(origin = SHOP, body: Record<string, unknown> = { siteKey: 'test-site' }) {
  return harness.http.post('/api/widget/session').set('Origin', origin).send(body);
}
async function newToken() {
  return (await session()).body.token as string;
}
const post = (token: string, body: Record<string, unknown>) =>
  harness.http.post('/api/widget/messages').set('Origin', SHOP).set('Authorization', `Bearer ${token}`).send(body);
let counter = 0;
const clientId = () => `client-${Date.now()}-${++counter}`;

describe('sessions', () => {
  test('an allowed origin gets a signed token, the site settings and CORS for that origin only', async () => {
    const response = await session();
    expect(response.status).toBe(200);
    expect(response.headers['access-control-allow-origin']).toBe(SHOP);
    expect(response.body).toMatchObject({
      token: expect.stringMatching(/^v1\./),
      visitorId: expect.any(String),
      conversationId: expect.stringMatching(/^web:test-site:/),
      site: { name: 'Harbour Lane', greeting: 'Hi! How can I help?', accentColor: '#0b7285', language: 'en', maxMessageChars: 200 },
    });
  });

  test.each([
    ['a disallowed origin', () => session('https://evil.example'), 403, 'this origin is not allowed for the site'],
    ["another site's origin", () => session('https://other.example.test'), 403, 'this origin is not allowed for the site'],
    ['no origin', () => harness.http.post('/api/widget/session').send({ siteKey: 'test-site' }), 403, 'this origin is not allowed for the site'],
    ['an unknown site key', () => session(SHOP, { siteKey: 'nope' }), 404, 'unknown site key'],
    ['a malformed body', () => session(SHOP, { siteKey: 42 }), 400, 'siteKey: Invalid input: expected string, received number'],
  ])('%s is refused', async (name, send, status, error) => {
    const response = await send();
    expect(response.status).toBe(status);
    expect(response.body.error).toBe(error);
    // Issue 29: the page may read why it was refused (its widget tells the site's developer), and nothing else.
    expect(Object.keys(response.body as object)).toEqual(status === 403 ? ['error', 'origin'] : ['error']);
    const origin =
      name === 'no origin'
        ? undefined
        : name === 'a disallowed origin'
          ? 'https://evil.example'
          : name === "another site's origin"
            ? 'https://other.example.test'
            : SHOP;
    expect(response.headers['access-control-allow-origin']).toBe(origin);
  });

  test('a session preflight is answered for any origin (the session itself still refuses it)', async () => {
    const preflight = await harness.http.options('/api/widget/session').set('Origin', 'https://evil.example').set('Access-Control-Request-Method', 'POST');
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('https://evil.example');
    expect(preflight.headers['access-control-allow-methods']).toBe('POST, OPTIONS');
  });

  test('a renewal with the old token keeps the visitor and the chat', async () => {
    const first = (await session()).body;
    const renewed = (await session(SHOP, { siteKey: 'test-site', token: first.token })).body;
    expect(renewed.conversationId).toBe(first.conversationId);
  });

  test('preflights are answered for allowed origins only', async () => {
    const ok = await harness.http.options('/api/widget/messages').set('Origin', SHOP).set('Access-Control-Request-Method', 'POST');
    expect(ok.status).toBe(204);
    expect(ok.headers['access-control-allow-headers']).toContain('authorization');
    const refused = await harness.http.options('/api/widget/messages').set('Origin', 'https://evil.example');
    expect(refused.status).toBe(403);
  });
});

describe('messages', () => {
  test('bad and expired tokens get 401 with what is wrong', async () => {
    expect((await post('v1.garbage.sig', { clientMessageId: clientId(), text: 'hi' })).body).toEqual({ error: 'invalid token' });
    const expired = createVisitorTokens(harness.config.web.tokenSecret, () => Date.now() - 2 * 24 * 3600 * 1000).issue({
      siteKey: 'test-site',
      visitorId: 'visitor-expired',
      chatId: 'chat-expired',
    });
    const response = await post(expired.token, { clientMessageId: clientId(), text: 'hi' });
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ error: 'token expired' });
  });

  test('a token used from another origin is refused', async () => {
    const token = await newToken();
    const response = await harness.http
      .post('/api/widget/messages')
      .set('Origin', 'https://evil.example')
      .set('Authorization', `Bearer ${token}`)
      .send({ clientMessageId: clientId(), text: 'hi' });
    expect(response.status).toBe(403);
  });

  test('a message over the size cap gets 413 with the limit', async () => {
    const response = await post(await newToken(), { clientMessageId: clientId(), text: 'x'.repeat(201) });
    expect(response.status).toBe(413);
    expect(response.body).toEqual({ error: 'message is longer than 200 characters', maxChars: 200 });
  });

  test('a retried or double-clicked message creates one turn and one reply', async () => {
    const token = await newToken();
    const id = clientId();
    const [first, second] = await Promise.all([
      post(token, { clientMessageId: id, text: 'opening hours?' }),
      post(token, { clientMessageId: id, text: 'opening hours?' }),
    ]);
    expect([first.status, second.status]).toEqual([202, 202]);
    expect([first.body.duplicate, second.body.duplicate].sort()).toEqual([false, true]);
    const history = await eventually(async () => {
      const response = await harness.http.get('/api/widget/history').set('Authorization', `Bearer ${token}`);
      return response.body.messages.length >= 2 ? response.body.messages : undefined;
    });
    await turnsSettled(harness.services);
    const again = await harness.http.get('/api/widget/history').set('Authorization', `Bearer ${token}`);
    expect(again.body.messages.map((message: { role: string; text: string }) => [message.role, message.text])).toEqual([
      ['visitor', 'opening hours?'],
      ['assistant', 'Our opening hours are nine to five, Monday to Friday.'],
    ]);
    expect(history[0].id).toBe(id);
  });

  test('a visitor sending too fast gets 429 with a retry time', async () => {
    const token = await newToken();
    const statuses: number[] = [];
    let retryAfter: string | undefined;
    for (let index = 0; index < 7; index += 1) {
      const response = await post(token, { clientMessageId: clientId(), text: `message ${index}` });
      statuses.push(response.status);
      if (response.status === 429) {
        retryAfter = response.headers['retry-after'];
        expect(response.body).toEqual({ error: 'too many messages, retry later', retryAfterSeconds: Number(retryAfter) });
      }
    }
    expect(statuses.filter((status) => status === 202)).toHaveLength(5);
    expect(statuses.filter((status) => status === 429)).toHaveLength(2);
    expect(Number(retryAfter)).toBeGreaterThan(0);
  });

  test('malformed JSON gets 400, never a 500', async () => {
    const response = await harness.http
      .post('/api/widget/messages')
      .set('Origin', SHOP)
      .set('Authorization', `Bearer ${await newToken()}`)
      .set('Content-Type', 'application/json')
      .send('{"clientMessageId": ');
    expect(response.status).toBe(400);
  });
});

describe('the event stream', () => {
  test('streams typing, the reply in pieces, then the complete message', async () => {
    const token = await newToken();
    const { events: streaming } = await openSse(`${base}/api/widget/events?token=${encodeURIComponent(token)}`, {
      headers: { origin: SHOP },
      until: (events) => events.some((event) => event.event === 'message'),
    });
    await post(token, { clientMessageId: clientId(), text: 'when are you open?' });
    const events = await streaming;
    expect(events[0]?.event).toBe('typing');
    const deltas = events.filter((event) => event.event === 'delta');
    const message = events.find((event) => event.event === 'message')!.data as { id: string; text: string };
    expect(deltas.length).toBeGreaterThanOrEqual(1);
    expect(deltas.map((event) => (event.data as { text: string }).text).join('')).toBe(message.text);
    expect((deltas[0]!.data as { messageId: string }).messageId).toBe(message.id);
    expect(message.text).toBe('Our opening hours are nine to five, Monday to Friday.');
  });

  test('a reconnect to another web process resumes after Last-Event-ID without loss or repeats', async () => {
    const other: Services = await createServices(loadConfig(harness.env), {
      logger: createLogger({ level: 'error', sink: () => undefined }),
      queuePrefix: harness.queuePrefix,
      models: harness.models,
    });
    const otherServer = other.app.listen(0, '127.0.0.1');
    await new Promise((resolve) => otherServer.once('listening', resolve));
    const otherBase = `http://127.0.0.1:${(otherServer.address() as AddressInfo).port}`;
    try {
      const token = await newToken();
      const url = (root: string) => `${root}/api/widget/events?token=${encodeURIComponent(token)}`;
      const { events: full } = await openSse(url(base), { headers: { origin: SHOP }, until: (events) => events.some((event) => event.event === 'message') });
      await post(token, { clientMessageId: clientId(), text: 'hours?' });
      const everything = await full;
      // Disconnected after the first event; the other process resumes from its id.
      const resumed: SseEvent[] = await collectSse(url(otherBase), {
        headers: { origin: SHOP, 'last-event-id': everything[0]!.id! },
        until: (events) => events.some((event) => event.event === 'message'),
      });
      expect(resumed.map((event) => event.id)).toEqual(everything.slice(1).map((event) => event.id));
    } finally {
      otherServer.close();
      await other.close();
    }
  });

  test('an SSE request without a valid token gets 401, not a stream', async () => {
    const response = await fetch(`${base}/api/widget/events?token=nope`, { headers: { origin: SHOP } });
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ error: 'invalid token' });
  });
});

describe('new chat', () => {
  test('starts an empty conversation for the same visitor', async () => {
    const first = (await session()).body;
    await post(first.token, { clientMessageId: clientId(), text: 'hello' });
    await eventually(
      async () => (await harness.http.get('/api/widget/history').set('Authorization', `Bearer ${first.token}`)).body.messages.length === 2 || undefined,
    );
    const fresh = await harness.http.post('/api/widget/new-chat').set('Origin', SHOP).set('Authorization', `Bearer ${first.token}`);
    expect(fresh.status).toBe(200);
    expect(fresh.body.conversationId).not.toBe(first.conversationId);
    expect(fresh.body.conversationId).toContain(first.visitorId);
    const history = await harness.http.get('/api/widget/history').set('Authorization', `Bearer ${fresh.body.token}`);
    expect(history.body.messages).toEqual([]);
  });
});
