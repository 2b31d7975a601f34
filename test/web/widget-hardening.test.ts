/**
 * The widget findings of the security review, each attacked as it was found: a history read
 * that scanned the message collection, unthrottled reads and streams, a spoofed
 * X-Forwarded-For dodging the per-IP limit behind TRUST_PROXY=true, message ids shared between
 * visitors, expired tokens renewing for ever, and a client-chosen visitor id.
 * The service runs behind one trusted proxy hop here: each test speaks from its own client
 * address, as that proxy would report it.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createVisitorTokens } from '../../channels/web/visitor-token.js';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/errors/index.js';
import { eventually, startHarness, testEnv, type Harness } from '../support/harness.js';
import { transcriptsWritten } from '../support/settled.js';

const SHOP = 'https://shop.example.test';
const SITES = JSON.stringify([{ key: 'test-site', name: 'Harbour Lane', origins: [SHOP] }]);
const VISITOR_REQUESTS = 5;
const IP_REQUESTS = 10;
const IP_MESSAGES = 3;
const STREAMS = 2;

let harness: Harness;
let server: Server;
let base: string;
beforeAll(async () => {
  harness = await startHarness({
    env: {
      WEB_SITES: SITES,
      TRUST_PROXY: 'true',
      WEB_VISITOR_REQUESTS_PER_MINUTE: String(VISITOR_REQUESTS),
      WEB_IP_REQUESTS_PER_MINUTE: String(IP_REQUESTS),
      WEB_IP_MESSAGES_PER_MINUTE: String(IP_MESSAGES),
      WEB_STREAMS_PER_VISITOR: String(STREAMS),
    },
    script: ({ userText }) => ({ text: `You said: ${userText}` }),
  });
  server = harness.services.app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  server.close();
  await harness.close();
});

let addresses = 0;
/** A client address of its own (TEST-NET-2), as the trusted proxy appends it. */
const newClientIp = () => `198.51.100.${++addresses}`;

const session = (ip: string, body: Record<string, unknown> = {}) =>
  harness.http
    .post('/api/widget/session')
    .set('Origin', SHOP)
    .set('X-Forwarded-For', ip)
    .send({ siteKey: 'test-site', ...body });
const history = (ip: string, token: string) =>
  harness.http.get('/api/widget/history').set('Origin', SHOP).set('X-Forwarded-For', ip).set('Authorization', `Bearer ${token}`);
const post = (forwardedFor: string, token: string, clientMessageId: string, text: string) =>
  harness.http
    .post('/api/widget/messages')
    .set('Origin', SHOP)
    .set('X-Forwarded-For', forwardedFor)
    .set('Authorization', `Bearer ${token}`)
    .send({ clientMessageId, text });

async function visitor(ip = newClientIp()) {
  const response = await session(ip);
  expect(response.status).toBe(200);
  return { ip, ...(response.body as { token: string; visitorId: string; conversationId: string }) };
}

/** Opens an event stream; the caller closes it. */
async function openStream(ip: string, token: string) {
  const abort = new AbortController();
  const response = await fetch(`${base}/api/widget/events?token=${encodeURIComponent(token)}`, {
    headers: { origin: SHOP, 'x-forwarded-for': ip, accept: 'text/event-stream' },
    signal: abort.signal,
  });
  return { status: response.status, body: response.ok ? undefined : ((await response.json()) as { error: string }), close: () => abort.abort() };
}

const rejected = (reason: string) => harness.logs.filter((line) => line.event === 'widget-request-rejected' && line.reason === reason);

/** Twice the limit plus one: whichever minute window the requests fall in, one window is over. */
const overLimit = (limit: number) => 2 * limit + 1;

describe('history', () => {
  test('is served from the Redis record, never a MongoDB query', async () => {
    const { ip, token, conversationId } = await visitor();
    expect((await post(ip, token, 'history-message-1', 'first question')).status).toBe(202);
    await eventually(async () => (await harness.services.transcripts.recent(conversationId)).length >= 2 || undefined);
    // The transcript writer's own writes (by `_id`, behind the conversation) are not the history's reads.
    await transcriptsWritten(harness.services);

    const queries: { collection: string; method: string; filter: unknown }[] = [];
    harness.services.mongo.set('debug', (collection: string, method: string, ...args: unknown[]) => {
      queries.push({ collection, method, filter: args[0] });
    });
    let response;
    try {
      response = await history(ip, token);
    } finally {
      harness.services.mongo.set('debug', false);
    }
    expect(response.status).toBe(200);
    const shown = (response.body.messages as { id: string; role: string; text: string }[]).map(({ id, role, text }) => ({ id, role, text }));
    expect(shown).toEqual([
      { id: 'history-message-1', role: 'visitor', text: 'first question' },
      { id: expect.stringMatching(/^out:web:/), role: 'assistant', text: 'You said: first question' },
    ]);
    expect(queries.filter((query) => JSON.stringify(query.filter ?? null).includes(conversationId))).toEqual([]);
  });
});

describe('request limits', () => {
  test.each([
    ['/history', (ip: string, token: string) => history(ip, token)],
    ['/session renewals', (ip: string, token: string) => session(ip, { token })],
    [
      '/new-chat',
      (ip: string, token: string) =>
        harness.http.post('/api/widget/new-chat').set('Origin', SHOP).set('X-Forwarded-For', ip).set('Authorization', `Bearer ${token}`),
    ],
  ])('%s is limited per visitor: 429 with a retry time, and a log line', async (_name, call) => {
    const { token } = await visitor();
    const before = rejected('rate_visitor_requests').length;
    const statuses: number[] = [];
    // Each call from its own address, so only the visitor's limit can refuse it.
    for (let index = 0; index < overLimit(VISITOR_REQUESTS); index += 1) {
      const response = await call(newClientIp(), token);
      statuses.push(response.status);
      if (response.status === 429) {
        expect(response.body).toEqual({ error: 'too many requests, retry later', retryAfterSeconds: Number(response.headers['retry-after']) });
      }
    }
    expect(statuses).toContain(429);
    expect(rejected('rate_visitor_requests').length).toBeGreaterThan(before);
  });

  test('/events is limited per visitor', async () => {
    const { ip, token } = await visitor();
    const streams = [];
    for (let index = 0; index < overLimit(VISITOR_REQUESTS); index += 1) streams.push(await openStream(ip, token));
    for (const stream of streams) stream.close();
    expect(streams.map((stream) => stream.body?.error)).toContain('too many requests, retry later');
  });

  test('new sessions are limited per IP address', async () => {
    const ip = newClientIp();
    const statuses: number[] = [];
    for (let index = 0; index < overLimit(IP_REQUESTS); index += 1) statuses.push((await session(ip)).status);
    expect(statuses).toContain(429);
    expect(rejected('rate_ip_requests').length).toBeGreaterThan(0);
  });
});

describe('event streams', () => {
  test(`one visitor holds at most ${STREAMS} streams; a closed one frees its slot`, async () => {
    const { ip, token, visitorId } = await visitor();
    const open = [await openStream(ip, token), await openStream(ip, token)];
    expect(open.map((stream) => stream.status)).toEqual([200, 200]);
    const extra = await openStream(ip, token);
    expect(extra.status).toBe(429);
    expect(extra.body).toEqual({ error: `at most ${STREAMS} open event streams per visitor`, maxStreams: STREAMS });
    expect(rejected('streams').length).toBeGreaterThan(0);

    open[0]!.close();
    await eventually(async () => (await harness.services.redis.zcard(`asst:streams:{test-site:${visitorId}}`)) === 1 || undefined);
    const again = await openStream(ip, token);
    expect(again.status).toBe(200);
    again.close();
    open[1]!.close();
  });
});

describe('TRUST_PROXY', () => {
  test('a spoofed X-Forwarded-For cannot dodge the per-IP message limit', async () => {
    const realIp = newClientIp();
    const statuses: number[] = [];
    for (let index = 0; index < overLimit(IP_MESSAGES); index += 1) {
      // A fresh visitor each time, so only the per-IP limit can refuse; the client writes a
      // different address first and the proxy appends the one it saw.
      const { token } = await visitor(newClientIp());
      const response = await post(`203.0.113.${index + 1}, ${realIp}`, token, `spoof-message-${index}`, 'hello');
      statuses.push(response.status);
    }
    expect(statuses).toContain(429);
    expect(rejected('rate_ip').length).toBeGreaterThan(0);
  });

  test.each([
    ['false', false],
    ['true', 1],
    ['2', 2],
    ['10.0.0.0/8, loopback,::1', ['10.0.0.0/8', 'loopback', '::1']],
  ])('TRUST_PROXY=%s means %j', (value, expected) => {
    expect(loadConfig(testEnv('http://127.0.0.1:1', { TRUST_PROXY: value })).trustProxy).toEqual(expected);
  });

  test.each(['everything', '10.0.0.0/33', '10.0.0.1,evil'])('TRUST_PROXY=%s is a configuration error naming it', (value) => {
    expect(() => loadConfig(testEnv('http://127.0.0.1:1', { TRUST_PROXY: value }))).toThrow(ConfigError);
    expect(() => loadConfig(testEnv('http://127.0.0.1:1', { TRUST_PROXY: value }))).toThrow(/TRUST_PROXY: expected false, a hop count/);
  });
});

describe('message ids', () => {
  test('two visitors using the same client message id each get their own message and reply', async () => {
    const alice = await visitor();
    const bob = await visitor();
    const shared = 'shared-client-id-0001';
    expect((await post(alice.ip, alice.token, shared, 'alpha question')).body).toEqual({ messageId: shared, duplicate: false });
    await eventually(async () => (await harness.services.transcripts.recent(alice.conversationId)).length >= 2 || undefined);
    expect((await post(bob.ip, bob.token, shared, 'bravo question')).body).toEqual({ messageId: shared, duplicate: false });
    await eventually(async () => (await harness.services.transcripts.recent(bob.conversationId)).length >= 2 || undefined);

    const texts = async (who: { ip: string; token: string }) =>
      ((await history(who.ip, who.token)).body.messages as { id: string; role: string; text: string }[]).map((message) => [message.role, message.text]);
    expect(await texts(bob)).toEqual([
      ['visitor', 'bravo question'],
      ['assistant', 'You said: bravo question'],
    ]);
    expect(await texts(alice)).toEqual([
      ['visitor', 'alpha question'],
      ['assistant', 'You said: alpha question'],
    ]);
    await transcriptsWritten(harness.services);
    const stored = await harness.services.transcripts.conversationMessages(bob.conversationId);
    expect(stored.map((message) => message.text)).toEqual(['bravo question', 'You said: bravo question']);
  });
});

describe('visitor tokens', () => {
  const expiredToken = (issuedDaysAgo: number) =>
    createVisitorTokens(harness.config.web.tokenSecret, () => Date.now() - issuedDaysAgo * 24 * 3600 * 1000).issue({
      siteKey: 'test-site',
      visitorId: `visitor-${issuedDaysAgo}-days`,
      chatId: `chat-${issuedDaysAgo}-days`,
    }).token;

  test('an expired token renews its session within 30 days of issue, and never after', async () => {
    const recent = (await session(newClientIp(), { token: expiredToken(2) })).body;
    expect(recent.conversationId).toBe('web:test-site:visitor-2-days:chat-2-days');
    const old = (await session(newClientIp(), { token: expiredToken(31) })).body;
    expect(old.visitorId).not.toBe('visitor-31-days');
    expect(old.conversationId).not.toContain('chat-31-days');
    expect(harness.logs.some((line) => line.event === 'widget-session-not-renewed' && line.reason === 'renewal_window')).toBe(true);
  });

  test("the service chooses the visitor id: a client naming one (a victim's) does not get it", async () => {
    const response = await session(newClientIp(), { visitorId: 'victim-visitor-0001' });
    expect(response.status).toBe(200);
    expect(response.body.visitorId).not.toBe('victim-visitor-0001');
    expect(response.body.conversationId).not.toContain('victim-visitor-0001');
  });
});
