/**
 * The live transcript page's HTTP surface, on transcripts stored on the MongoDB-wire server and
 * a recording stand-in for the takeover service: the page (its CSP nonce, controls, the team's
 * members, settings that stay data), its event stream (authorised and ended by the link's
 * expiry) and its actions — each bad request (expired link, forged token, missing or wrong
 * CSRF, oversized reply, unknown action, another conversation's hand-off, a stranger's name,
 * a cross-site or non-JSON post) refused with its 4xx and a log line, never a 500, and never
 * reaching the takeover service.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import type { Connection } from 'mongoose';
import request from 'supertest';
import { createApp } from '../../src/http/app.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { Redis } from 'ioredis';
import { createTranscriptOutbox, type TranscriptOutbox } from '../../src/store/outbox.js';
import { connectMongo, createTranscriptStore, type TranscriptStore } from '../../src/store/transcript-store.js';
import { createTranscriptWriter, type TranscriptWriter } from '../../src/store/transcript-writer.js';
import type { LiveActor, LiveEvent, LiveHandoff, LiveOutcome, LiveTakeover } from '../../src/transcripts/live-takeover.js';
import { createTranscriptLinks, type TranscriptLinks } from '../../src/transcripts/transcript-link.js';
import { createTranscriptRouter } from '../../src/transcripts/transcript-router.js';
import { eventually, testEnv, type LogLine } from '../support/harness.js';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { collectSse, openSse } from '../support/sse.js';

const SECRET = 'transcript-link-secret-for-tests-0123456789';
const BASE = 'https://assistant.example.test';
const CUSTOMER = 'web:site:visitor-live-1:chat';
const OTHER = 'web:site:visitor-live-2:chat';
const MAX_REPLY = 300;
const ANA = { name: 'Ana', whatsapp: 'whatsapp:+447700900501' };
const BEN = { name: 'Ben', whatsapp: 'whatsapp:+447700900502' };

let mongo: Connection;
let redis: Redis;
let writer: TranscriptWriter;
let outbox: TranscriptOutbox;
let transcripts: TranscriptStore;
let links: TranscriptLinks;
let http: ReturnType<typeof request>;
let server: Server | undefined;
const logs: LogLine[] = [];
const draining = new AbortController();

/** Stands in for the takeover service: hand-offs in memory, every call recorded. */
function fakeTakeover() {
  const handoffs = new Map<string, LiveHandoff & { takenBy?: { name: string; id: string } }>();
  const calls: { method: string; handoffId: string; by: LiveActor; text?: string; holderOnly?: boolean }[] = [];
  const listeners = new Map<string, Set<(event: LiveEvent) => void>>();
  const act = (method: string, handoffId: string, by: LiveActor, text?: string): LiveOutcome => {
    calls.push({ method, handoffId, by, ...(text === undefined ? {} : { text }) });
    const handoff = handoffs.get(handoffId);
    if (!handoff) return { outcome: 'not_found' };
    if (handoff.takenBy && handoff.takenBy.id !== by.id) return { outcome: 'held', holder: handoff.takenBy };
    handoff.status = 'taken';
    handoff.takenBy = { name: by.name, id: by.id };
    return { outcome: method === 'reply' ? 'queued' : 'taken' };
  };
  const service: LiveTakeover = {
    handoffsOf: async (conversationId) => [...handoffs.values()].filter((handoff) => handoff.conversationId === conversationId),
    get: async (handoffId) => handoffs.get(handoffId),
    takeOver: async ({ handoffId, by }) => act('takeOver', handoffId, by),
    teammateReply: async ({ handoffId, by, text }) => act('reply', handoffId, by, text),
    handBack: async ({ handoffId, by, holderOnly }) => {
      calls.push({ method: 'handBack', handoffId, by, ...(holderOnly === undefined ? {} : { holderOnly }) });
      return { outcome: 'handed_back' };
    },
    close: async ({ handoffId, by }) => {
      calls.push({ method: 'close', handoffId, by });
      return { outcome: 'closed' };
    },
    subscribe: async (conversationId, listener) => {
      const set = listeners.get(conversationId) ?? new Set();
      set.add(listener);
      listeners.set(conversationId, set);
      return async () => {
        set.delete(listener);
      };
    },
  };
  return {
    service,
    calls,
    handoffs,
    emit: (conversationId: string, event: LiveEvent) => listeners.get(conversationId)?.forEach((listener) => listener(event)),
    listening: (conversationId: string) => listeners.get(conversationId)?.size ?? 0,
  };
}
let takeover: ReturnType<typeof fakeTakeover>;

function appWith(transcriptLinks: TranscriptLinks) {
  const logger = createLogger({ level: 'debug', sink: (line) => logs.push(JSON.parse(line) as LogLine) });
  const app = createApp({
    trustProxy: false,
    routers: [
      createTranscriptRouter({
        links: transcriptLinks,
        transcripts,
        logger,
        live: {
          takeover: takeover.service,
          teams: { support: { label: 'Support', members: [ANA, BEN] }, sales: { label: 'Sales', members: [] } },
          maxReplyChars: MAX_REPLY,
          shutdown: draining.signal,
          rereadMs: 500,
        },
      }),
    ],
    readiness: [],
    logger,
    metrics: createMetrics(),
    isShuttingDown: () => false,
  });
  return app;
}

const pathOf = (link: string) => link.slice(BASE.length);
const linkParts = (link: string) => {
  const url = new URL(link);
  return { path: url.pathname, expires: url.searchParams.get('expires')!, sig: url.searchParams.get('sig')! };
};

/** Opens the page and reads what its script would post with. */
async function openPage(link: string): Promise<{ path: string; expires: string; sig: string; csrf: string; handoffId: string }> {
  const response = await http.get(pathOf(link));
  expect(response.status).toBe(200);
  const config = JSON.parse(/<script type="application\/json" id="live-config">([^<]*)<\/script>/.exec(response.text)![1]!) as {
    csrf: string;
    handoff: { id: string } | null;
  };
  return { ...linkParts(link), csrf: config.csrf, handoffId: config.handoff?.id ?? '' };
}

beforeAll(async () => {
  const env = testEnv('http://127.0.0.1:9');
  mongo = await connectMongo(env.MONGODB_URI!);
  redis = new Redis(env.REDIS_URL!);
  const quiet = createLogger({ level: 'error', sink: () => undefined });
  outbox = createTranscriptOutbox({ redis, maxBacklog: 1000, database: mongo.db!.databaseName, logger: quiet, metrics: createMetrics() });
  transcripts = createTranscriptStore(mongo, { redis, outbox });
  // The transcript reaches MongoDB (what the page reads) through the outbox, which the writer drains.
  writer = createTranscriptWriter({ connection: mongo, outbox, batchSize: 100, logger: quiet, metrics: createMetrics() });
  writer.start();
  await transcripts.ensureIndexes();
  links = createTranscriptLinks({ secret: SECRET, publicBaseUrl: BASE, ttlHours: 72 });
  for (const [key, text] of [
    [CUSTOMER, 'My mooring line broke </script><script>alert(1)</script>'],
    [OTHER, 'Someone else entirely'],
  ] as const) {
    const { conversationId } = await transcripts.openConversation({ key, channel: 'web', address: key });
    await transcripts.recordInbound({ conversationId, channel: 'web', channelMessageId: `${key}-1`, text, receivedAt: new Date(Date.now() - 60_000) });
  }
  await eventually(async () => (await outbox.backlog()) === 0 || undefined);
});

beforeEach(async () => {
  takeover = fakeTakeover();
  const now = new Date();
  takeover.handoffs.set('h-customer', { _id: 'h-customer', team: 'support', status: 'open', conversationId: CUSTOMER, createdAt: now });
  takeover.handoffs.set('h-other', { _id: 'h-other', team: 'support', status: 'open', conversationId: OTHER, createdAt: now });
  const app = appWith(links);
  http = request(app);
  server?.closeAllConnections();
  server?.close();
  const listening = app.listen(0, '127.0.0.1');
  server = listening;
  await new Promise((resolve) => listening.once('listening', resolve));
});

const origin = () => `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;

afterAll(async () => {
  server?.closeAllConnections();
  server?.close();
  draining.abort();
  await writer.close();
  redis.disconnect();
  await mongo.dropDatabase();
  await mongo.close();
});

describe('the live page', () => {
  test('runs only its own script, by a fresh nonce, and cannot be framed, sniffed, cached or indexed', async () => {
    const first = await http.get(pathOf(links.url(CUSTOMER)));
    const second = await http.get(pathOf(links.url(CUSTOMER)));
    expect(first.status).toBe(200);
    const csp = first.headers['content-security-policy'] as string;
    const nonce = /script-src 'nonce-([A-Za-z0-9+/=]+)'/.exec(csp)?.[1];
    expect(nonce).toBeDefined();
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(second.headers['content-security-policy']).not.toContain(nonce!);
    expect(first.headers['x-frame-options']).toBe('DENY');
    expect(first.headers['x-content-type-options']).toBe('nosniff');
    expect(first.headers['cache-control']).toBe('no-store');
    expect(first.headers['referrer-policy']).toBe('no-referrer');
    // One executable script, carrying the nonce; the settings are a JSON data block.
    const scripts = first.text.match(/<script[^>]*>/g) ?? [];
    expect(scripts).toEqual(['<script type="application/json" id="live-config">', `<script nonce="${nonce}">`]);
    expect(first.text).not.toMatch(/\son\w+=/i);
  });

  test('shows who has the conversation, the actions, a reply box and the team members to choose from', async () => {
    const response = await http.get(pathOf(links.url(CUSTOMER)));
    expect(response.text).toContain('Handed to Support: the assistant still answers until someone takes over.');
    for (const label of ['Take over', 'Hand back to the assistant', 'Close', 'Send']) expect(response.text).toContain(`>${label}</button>`);
    expect(response.text).toContain('<option>Ana</option><option>Ben</option>');
    expect(response.text).toContain(`maxlength="${MAX_REPLY}"`);
  });

  test("stored text can't close the settings block or the page's markup", async () => {
    const response = await http.get(pathOf(links.url(CUSTOMER)));
    expect(response.text).toContain('My mooring line broke &lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(response.text.match(/<\/script>/g)).toHaveLength(2);
  });
});

describe('the event stream', () => {
  test('sends what is stored and the hand-off, then each new message as it happens', async () => {
    const { path, expires, sig } = linkParts(links.url(CUSTOMER));
    const stream = await openSse(`${origin()}${path}/events?expires=${expires}&sig=${sig}`, {
      until: (events) =>
        events.some((event) => event.event === 'state') &&
        events.some((event) => event.event === 'message' && (event.data as { text: string }).text === 'Ben here'),
    });
    // The stream subscribed before it answered: nothing from now on can be missed.
    expect(takeover.listening(CUSTOMER)).toBe(1);
    takeover.emit(CUSTOMER, { type: 'message', message: { id: 'tm-1', author: 'teammate', name: 'Ben', text: 'Ben here', at: Date.now() } });
    const events = await stream.events;
    expect(events.filter((event) => event.event === 'message').map((event) => (event.data as { text: string }).text)).toEqual(
      expect.arrayContaining(['My mooring line broke </script><script>alert(1)</script>', 'Ben here']),
    );
    expect(events.find((event) => event.event === 'state')?.data).toEqual({
      handoff: { id: 'h-customer', team: 'support', teamLabel: 'Support', status: 'open' },
    });
  });

  test("a stored message nobody published (a publication lost) still arrives, and a teammate's keeps their name", async () => {
    const { path, expires, sig } = linkParts(links.url(CUSTOMER));
    const stream = await openSse(`${origin()}${path}/events?expires=${expires}&sig=${sig}`, {
      until: (events) => events.some((event) => event.event === 'message' && (event.data as { text: string }).text === 'Ana here, stored'),
    });
    const replyTo = `${CUSTOMER}-1`;
    const { conversationId } = await transcripts.openConversation({ key: CUSTOMER, channel: 'web', address: CUSTOMER });
    await transcripts.saveReplyParts({ conversationId, channel: 'web', replyTo, roleId: 'support', parts: ['The assistant answers'] });
    await transcripts.saveReplyParts({ conversationId, channel: 'web', replyTo: 'tm_stored', roleId: 'teammate:Ana', parts: ['Ana here, stored'] });
    const messages = (await stream.events)
      .filter((event) => event.event === 'message')
      .map((event) => event.data as { author: string; name?: string; text: string });
    expect(messages).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ author: 'assistant', text: 'The assistant answers' }),
        expect.objectContaining({ author: 'teammate', name: 'Ana', text: 'Ana here, stored' }),
      ]),
    );
    // Each once, though read again every few seconds.
    expect(new Set(messages.map((message) => message.text)).size).toBe(messages.length);
  });

  test('with a forged signature gets 403, expired 410, both logged', async () => {
    const { path, expires, sig } = linkParts(links.url(CUSTOMER));
    const forged = await http.get(`${path}/events?expires=${expires}&sig=${sig.replace(/^./, (first) => (first === 'A' ? 'B' : 'A'))}`);
    expect(forged.status).toBe(403);
    expect(logs.at(-1)).toMatchObject({ event: 'transcript-link-rejected', reason: 'invalid' });
    const old = createTranscriptLinks({ secret: SECRET, publicBaseUrl: BASE, ttlHours: 72, now: () => Date.now() - 73 * 3600 * 1000 });
    const expired = linkParts(old.url(CUSTOMER));
    expect((await http.get(`${expired.path}/events?expires=${expired.expires}&sig=${expired.sig}`)).status).toBe(410);
    expect(logs.at(-1)).toMatchObject({ event: 'transcript-link-rejected', reason: 'expired' });
    expect(takeover.listening(CUSTOMER)).toBe(0);
  });

  test('ends when the link expires, saying so', async () => {
    // A link with about a second left.
    const soon = createTranscriptLinks({ secret: SECRET, publicBaseUrl: BASE, ttlHours: 1, now: () => Date.now() - 3600 * 1000 + 1500 });
    const { path, expires, sig } = linkParts(soon.url(CUSTOMER));
    const events = await collectSse(`${origin()}${path}/events?expires=${expires}&sig=${sig}`, {
      until: (seen) => seen.some((event) => event.event === 'expired'),
      timeoutMs: 5_000,
    });
    expect(events.at(-1)?.event).toBe('expired');
    expect(logs.some((line) => line.event === 'transcript-stream-expired')).toBe(true);
  });
});

describe('an action', () => {
  const post = (path: string, body: Record<string, unknown>) => http.post(`${path}/actions`).set('Content-Type', 'application/json').send(JSON.stringify(body));

  test('takes over as the chosen member (known by their WhatsApp number), and a second member is told who has it', async () => {
    const page = await openPage(links.url(CUSTOMER));
    const taken = await post(page.path, { ...page, action: 'take_over', by: 'Ana' });
    expect(taken.status).toBe(200);
    expect(taken.body).toMatchObject({ ok: true, outcome: 'taken', handoff: { id: 'h-customer', status: 'taken', holder: 'Ana' } });
    expect(takeover.calls).toEqual([
      { method: 'takeOver', handoffId: 'h-customer', by: { id: ANA.whatsapp, name: 'Ana', via: 'page', whatsapp: ANA.whatsapp } },
    ]);
    expect(logs.at(-1)).toMatchObject({ event: 'transcript-action', action: 'take_over', by: 'Ana', outcome: 'taken' });

    const second = await post(page.path, { ...page, action: 'reply', by: 'Ben', text: 'I can help too' });
    expect(second.status).toBe(409);
    expect(second.body.error).toBe('Ana is handling this');
  });

  test('hands back (only as the holder) and closes, each recorded as the page and who acted', async () => {
    const page = await openPage(links.url(CUSTOMER));
    expect((await post(page.path, { ...page, action: 'hand_back', by: 'Ana' })).status).toBe(200);
    expect((await post(page.path, { ...page, action: 'close', by: 'Ben' })).status).toBe(200);
    const byAna = { id: ANA.whatsapp, name: 'Ana', via: 'page', whatsapp: ANA.whatsapp };
    const byBen = { id: BEN.whatsapp, name: 'Ben', via: 'page', whatsapp: BEN.whatsapp };
    expect(takeover.calls).toEqual([
      { method: 'handBack', handoffId: 'h-customer', by: byAna, holderOnly: true },
      { method: 'close', handoffId: 'h-customer', by: byBen },
    ]);
    expect(logs.filter((line) => line.event === 'transcript-action').map((line) => [line.action, line.by])).toEqual(
      expect.arrayContaining([
        ['hand_back', 'Ana'],
        ['close', 'Ben'],
      ]),
    );
  });

  test('replies with the text trimmed', async () => {
    const page = await openPage(links.url(CUSTOMER));
    const response = await post(page.path, { ...page, action: 'reply', by: 'Ana', text: '  Which berth is it?  ' });
    expect(response.status).toBe(200);
    expect(takeover.calls.at(-1)).toMatchObject({ method: 'reply', text: 'Which berth is it?' });
  });

  const refusals: [string, (page: Awaited<ReturnType<typeof openPage>>) => Promise<request.Response>, number, string][] = [
    [
      'a forged link signature',
      (page) => post(page.path, { ...page, sig: page.sig.replace(/^./, (first) => (first === 'A' ? 'B' : 'A')), action: 'take_over', by: 'Ana' }),
      403,
      'link_invalid',
    ],
    ['no CSRF token', (page) => post(page.path, { ...page, csrf: undefined, action: 'take_over', by: 'Ana' }), 403, 'csrf_missing'],
    [
      'a made-up CSRF token',
      (page) => post(page.path, { ...page, csrf: `${'A'.repeat(22)}.${'B'.repeat(43)}`, action: 'take_over', by: 'Ana' }),
      403,
      'csrf_invalid',
    ],
    [
      "another link's CSRF token",
      async (page) => post(page.path, { ...page, csrf: (await openPage(links.url(OTHER))).csrf, action: 'take_over', by: 'Ana' }),
      403,
      'csrf_invalid',
    ],
    ['an unknown action', (page) => post(page.path, { ...page, action: 'delete_everything', by: 'Ana' }), 400, 'unknown_action'],
    ['a reply over the limit', (page) => post(page.path, { ...page, action: 'reply', by: 'Ana', text: 'x'.repeat(MAX_REPLY + 1) }), 413, 'reply_too_long'],
    ['an empty reply', (page) => post(page.path, { ...page, action: 'reply', by: 'Ana', text: '   ' }), 400, 'empty_reply'],
    ["another conversation's hand-off", (page) => post(page.path, { ...page, handoffId: 'h-other', action: 'take_over', by: 'Ana' }), 404, 'unknown_handoff'],
    ['a name that is not in the team', (page) => post(page.path, { ...page, action: 'take_over', by: 'Mallory' }), 400, 'unknown_teammate'],
    ['a malformed body', (page) => post(page.path, { ...page, action: 7 }), 400, 'malformed'],
    ['a cross-site request', (page) => post(page.path, { ...page, action: 'take_over', by: 'Ana' }).set('Sec-Fetch-Site', 'cross-site'), 403, 'cross_site'],
    [
      'a form post instead of JSON',
      (page) => http.post(`${page.path}/actions`).type('form').send({ expires: page.expires, sig: page.sig, csrf: page.csrf, action: 'take_over', by: 'Ana' }),
      415,
      'content_type',
    ],
  ];
  test.each(refusals)('with %s is refused with its 4xx and logged, and never reaches the takeover', async (_name, send, status, reason) => {
    const page = await openPage(links.url(CUSTOMER));
    const response = await send(page);
    expect(response.status).toBe(status);
    expect(typeof response.body.error).toBe('string');
    expect(logs.at(-1)).toMatchObject({ event: 'transcript-action-rejected', status, reason });
    expect(takeover.calls).toEqual([]);
  });

  test('with an expired link gets 410', async () => {
    const old = createTranscriptLinks({ secret: SECRET, publicBaseUrl: BASE, ttlHours: 72, now: () => Date.now() - 73 * 3600 * 1000 });
    const { path, expires, sig } = linkParts(old.url(CUSTOMER));
    const page = await openPage(links.url(CUSTOMER));
    const response = await post(path, { expires, sig, csrf: page.csrf, handoffId: page.handoffId, action: 'take_over', by: 'Ana' });
    expect(response.status).toBe(410);
    expect(logs.at(-1)).toMatchObject({ event: 'transcript-action-rejected', reason: 'link_expired' });
    expect(takeover.calls).toEqual([]);
  });

  test('with a body over the size limit gets 413, logged', async () => {
    const page = await openPage(links.url(CUSTOMER));
    const response = await post(page.path, { ...page, action: 'reply', by: 'Ana', text: 'x'.repeat(40_000) });
    expect(response.status).toBe(413);
    expect(logs.at(-1)).toMatchObject({ event: 'request-rejected', status: 413 });
    expect(takeover.calls).toEqual([]);
  });
});
