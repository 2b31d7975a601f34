/**
 * The transcript page behind a signed link, read from a transcript stored on the MongoDB-wire
 * server: what a teammate sees (who, where, every message in order, failed deliveries), what
 * the browser is told (no caching, indexing, referrer, scripts or loads), stored text that
 * stays text, and the plain refusals for invalid, expired or misdirected links.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Connection } from 'mongoose';
import request from 'supertest';
import { createApp } from '../../src/http/app.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { Redis } from 'ioredis';
import { createTranscriptOutbox, type TranscriptOutbox } from '../../src/store/outbox.js';
import { connectMongo, createTranscriptStore, outboundMessageId, type TranscriptStore } from '../../src/store/transcript-store.js';
import { createTranscriptWriter, type TranscriptWriter } from '../../src/store/transcript-writer.js';
import { createTranscriptLinks, type TranscriptLinks } from '../../src/transcripts/transcript-link.js';
import type { PageRatings } from '../../src/transcripts/page-ratings.js';
import type { PageGuidance } from '../../src/transcripts/page-guidance.js';
import { createPageGuidance } from '../../src/guidance/page-entries.js';
import { createGuidanceStore } from '../../src/guidance/store.js';
import { createTranscriptRouter } from '../../src/transcripts/transcript-router.js';
import { eventually, testEnv, type LogLine } from '../support/harness.js';

const SECRET = 'transcript-link-secret-for-tests-0123456789';
const BASE = 'https://assistant.example.test';
const CUSTOMER = 'whatsapp:+447700900123';
const OTHER_CUSTOMER = 'whatsapp:+447700900456';
const HOSTILE_TEXT = '<script>alert("owned")</script> & <img src=x onerror=alert(1)>';

let mongo: Connection;
let redis: Redis;
let outbox: TranscriptOutbox;
let writer: TranscriptWriter;
const written = () => eventually(async () => (await outbox.backlog()) === 0 || undefined);
let transcripts: TranscriptStore;
let links: TranscriptLinks;
let http: ReturnType<typeof request>;
const logs: LogLine[] = [];

/** The path and query of a link, as a browser would request them from this server. */
const pathOf = (link: string) => link.slice(BASE.length);

function appWith(transcriptLinks: TranscriptLinks, ratings?: PageRatings, guidance?: PageGuidance) {
  const logger = createLogger({ level: 'debug', sink: (line) => logs.push(JSON.parse(line) as LogLine) });
  return request(
    createApp({
      trustProxy: false,
      routers: [createTranscriptRouter({ links: transcriptLinks, transcripts, logger, ...(ratings ? { ratings } : {}), ...(guidance ? { guidance } : {}) })],
      readiness: [],
      logger,
      metrics: createMetrics(),
      isShuttingDown: () => false,
    }),
  );
}

async function storeConversation(address: string, displayName: string, inboundText: string): Promise<string> {
  const { conversationId } = await transcripts.openConversation({ key: address, channel: 'whatsapp', address, displayName });
  await transcripts.recordInbound({
    conversationId,
    channel: 'whatsapp',
    channelMessageId: `SM${address.slice(-6)}inbound`,
    text: inboundText,
    receivedAt: new Date(Date.now() - 60_000),
  });
  return conversationId;
}

beforeAll(async () => {
  const env = testEnv('http://127.0.0.1:9');
  mongo = await connectMongo(env.MONGODB_URI!);
  redis = new Redis(env.REDIS_URL!);
  const metrics = createMetrics();
  const logger = createLogger({ level: 'error', sink: () => undefined });
  outbox = createTranscriptOutbox({ redis, maxBacklog: 1000, database: mongo.db!.databaseName, logger, metrics });
  transcripts = createTranscriptStore(mongo, { redis, outbox });
  writer = createTranscriptWriter({ connection: mongo, outbox, batchSize: 100, logger, metrics });
  await transcripts.ensureIndexes();
  links = createTranscriptLinks({ secret: SECRET, publicBaseUrl: BASE, ttlHours: 72 });
  http = appWith(links);

  const conversationId = await storeConversation(CUSTOMER, 'Amelia <b>Hart</b>', HOSTILE_TEXT);
  const replyTo = `SM${CUSTOMER.slice(-6)}inbound`;
  await transcripts.saveReplyParts({
    conversationId,
    channel: 'whatsapp',
    replyTo,
    roleId: 'support',
    parts: ['Thanks Amelia — I can help with that.\nYour order ships on Monday.', 'Anything else?'],
  });
  await transcripts.markPartSent(outboundMessageId('whatsapp', replyTo, 0), 'SMdelivered0001', 'delivered');
  await transcripts.markPartFailed(outboundMessageId('whatsapp', replyTo, 1), 'failed', '63016', 'Outside the allowed window');
  await storeConversation(OTHER_CUSTOMER, 'Someone Else', 'A private message for someone else');
  // The transcript reaches MongoDB through the outbox, which the writer drains.
  writer.start();
  await written();
});
afterAll(async () => {
  await writer.close();
  redis.disconnect();
  await mongo.dropDatabase();
  await mongo.close();
});

function expectPrivateHeaders(response: request.Response) {
  expect(response.headers['cache-control']).toBe('no-store');
  expect(response.headers['x-robots-tag']).toContain('noindex');
  expect(response.headers['referrer-policy']).toBe('no-referrer');
  expect(response.headers['content-security-policy']).toMatch(/^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/]+={0,2}'/);
}

describe('a valid link', () => {
  let response: request.Response;
  beforeAll(async () => {
    response = await http.get(pathOf(links.url(CUSTOMER)));
  });

  test('gets the transcript page with headers that keep it private', () => {
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
    expectPrivateHeaders(response);
  });

  test('is readable on a phone: viewport, system font, a narrow column', () => {
    expect(response.text).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">');
    expect(response.text).toContain('font: 16px/1.45 system-ui');
    expect(response.text).toContain('max-width: 42rem');
  });

  test("the CSP's hash is the page's own stylesheet, and the page loads and runs nothing", () => {
    const style = /<style>([\s\S]*?)<\/style>/.exec(response.text)?.[1] ?? '';
    const hash = createHash('sha256').update(style, 'utf8').digest('base64');
    expect(response.headers['content-security-policy']).toContain(`style-src 'sha256-${hash}'`);
    const tags = response.text.match(/<[a-z][^>]*>/gi) ?? [];
    const elements = new Set(tags.map((tag) => /^<([a-z0-9]+)/i.exec(tag)![1]!.toLowerCase()));
    expect([...elements].sort()).toEqual(
      [
        'article',
        'body',
        'dd',
        'div',
        'dl',
        'dt',
        'footer',
        'h1',
        'h2',
        'head',
        'header',
        'html',
        'li',
        'main',
        'meta',
        'ol',
        'p',
        'span',
        'style',
        'time',
        'title',
      ].sort(),
    );
    expect(tags.filter((tag) => /\s(on\w+|src|href|style|action)=/i.test(tag))).toEqual([]);
  });

  test('names the customer and the channel, every stored text escaped', () => {
    expect(response.text).toContain('<dd>Amelia &lt;b&gt;Hart&lt;/b&gt; (whatsapp:+447700900123)</dd>');
    expect(response.text).toContain('<dt>Channel</dt><dd>whatsapp</dd>');
    expect(response.text).toContain('&lt;script&gt;alert(&quot;owned&quot;)&lt;/script&gt; &amp; &lt;img src=x onerror=alert(1)&gt;');
    expect(response.text).not.toContain(HOSTILE_TEXT);
  });

  test('shows the messages in order, labelled and timed, with the failed delivery noted', () => {
    const customer = response.text.indexOf('<li class="customer" data-id="in:whatsapp:');
    const firstReply = response.text.indexOf('Thanks Amelia');
    const secondReply = response.text.indexOf('Anything else?');
    expect(customer).toBeGreaterThan(-1);
    expect(firstReply).toBeGreaterThan(customer);
    expect(secondReply).toBeGreaterThan(firstReply);
    expect(response.text.match(/<li class="assistant" data-id="out:whatsapp:[^"]+#\d">/g)).toHaveLength(2);
    expect(response.text.match(/<time datetime="\d{4}-\d\d-\d\dT[\d:.]+Z">\d\d:\d\d<\/time>/g)).toHaveLength(3);
    expect(response.text).toContain('<p class="status">Not delivered · error 63016: Outside the allowed window</p>');
    expect(response.text.match(/class="status"/g)).toHaveLength(1);
    expect(response.text).not.toContain('someone else');
  });
});

describe('a refused link', () => {
  const expectRefusal = (response: request.Response, status: number, text: string) => {
    expect(response.status).toBe(status);
    expect(response.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(response.text).toBe(`${text}\n`);
    expectPrivateHeaders(response);
    expect(response.text).not.toContain('Amelia');
  };

  test("for one conversation does not open another's", async () => {
    const query = new URL(links.url(CUSTOMER)).search;
    expectRefusal(await http.get(`/transcripts/${encodeURIComponent(OTHER_CUSTOMER)}${query}`), 403, 'This link is not valid');
    expect(logs.at(-1)).toMatchObject({ event: 'transcript-link-rejected', reason: 'invalid' });
  });

  test.each([
    [
      'a tampered signature',
      (url: URL) =>
        url.searchParams.set(
          'sig',
          url.searchParams.get('sig')!.replace(/^./, (first) => (first === 'A' ? 'B' : 'A')),
        ),
    ],
    ['a tampered expiry', (url: URL) => url.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 86_400))],
    ['no signature', (url: URL) => url.searchParams.delete('sig')],
    ['a repeated signature', (url: URL) => url.searchParams.append('sig', url.searchParams.get('sig')!)],
  ])('with %s gets 403', async (_name, tamper) => {
    const url = new URL(links.url(CUSTOMER));
    tamper(url);
    expectRefusal(await http.get(`${url.pathname}${url.search}`), 403, 'This link is not valid');
  });

  test('whose path does not decode gets 403', async () => {
    expectRefusal(await http.get('/transcripts/%E0%A4%A?expires=1&sig=x'), 403, 'This link is not valid');
  });

  test('past its expiry gets 410', async () => {
    const issuedLongAgo = createTranscriptLinks({ secret: SECRET, publicBaseUrl: BASE, ttlHours: 72, now: () => Date.now() - 73 * 3600 * 1000 });
    expectRefusal(await http.get(pathOf(issuedLongAgo.url(CUSTOMER))), 410, 'This link has expired');
    expect(logs.at(-1)).toMatchObject({ event: 'transcript-link-rejected', reason: 'expired' });
  });

  test('to a conversation that no longer exists gets 404', async () => {
    const response = await http.get(pathOf(links.url('whatsapp:+447700900999')));
    expect(response.status).toBe(404);
    expect(response.text).toBe('This conversation is no longer available\n');
  });
});

test('a conversation without messages says so', async () => {
  await transcripts.openConversation({ key: 'whatsapp:+447700900777', channel: 'whatsapp', address: 'whatsapp:+447700900777' });
  await written();
  const response = await http.get(pathOf(links.url('whatsapp:+447700900777')));
  expect(response.status).toBe(200);
  expect(response.text).toContain('<p class="empty">No messages yet.</p>');
});

describe("the customer's satisfaction answers", () => {
  test('are shown where they were given, their comment escaped', async () => {
    const ratings: PageRatings = async (conversationId) =>
      conversationId === CUSTOMER ? [{ id: `${CUSTOMER}|1`, score: 2, at: new Date(), comment: HOSTILE_TEXT, withPerson: false }] : [];
    const response = await appWith(links, ratings).get(pathOf(links.url(CUSTOMER)));
    expect(response.status).toBe(200);
    const rating = /<li class="system rating"[^>]*>.*?<\/li>/s.exec(response.text)?.[0] ?? '';
    expect(rating).toContain('<span class="stars" aria-hidden="true">★★☆☆☆</span>Rated 2 out of 5</p>');
    expect(rating).toContain('&lt;script&gt;alert(&quot;owned&quot;)&lt;/script&gt;');
    expect(rating).not.toContain('<script>');
    // The newest entry: after every message of the conversation.
    expect(response.text.indexOf('Anything else?')).toBeLessThan(response.text.indexOf(rating));
  });

  test('that cannot be read leave the page whole, with a log line', async () => {
    const response = await appWith(links, async () => Promise.reject(new Error('csat read failed'))).get(pathOf(links.url(CUSTOMER)));
    expect(response.status).toBe(200);
    expect(response.text).toContain('Anything else?');
    expect(response.text).not.toContain('class="system rating"');
    expect(logs.some((line) => line.event === 'transcript-ratings-failed')).toBe(true);
  });
});

describe("a reply's guidance", () => {
  const GUIDED = 'whatsapp:+447700900321';
  const QUOTED = 'g_0000000000a1';
  const APPLIED = 'g_0000000000a2';
  const REMOVED = 'g_0000000000a3';
  let page: string;
  beforeAll(async () => {
    const store = createGuidanceStore(mongo);
    const updatedAt = new Date().toISOString();
    await store.putDraft({
      id: QUOTED,
      category: 'style',
      text: 'Greet <b>warmly</b> & sign off with the shop name, always, in every reply',
      scope: {},
      updatedAt,
    });
    await store.putDraft({ id: APPLIED, category: 'escalation', text: 'A refund over 100 pounds goes to support', scope: {}, team: 'support', updatedAt });
    const conversationId = await storeConversation(GUIDED, 'Guided Customer', 'I want a refund of 250 pounds');
    await transcripts.saveReplyParts({
      conversationId,
      channel: 'whatsapp',
      replyTo: `SM${GUIDED.slice(-6)}inbound`,
      roleId: 'support',
      parts: ['I am handing you to our support team.', 'They will write soon.'],
      guidance: { entries: [QUOTED, APPLIED, REMOVED], applied: [APPLIED] },
    });
    await written();
    const response = await appWith(links, undefined, createPageGuidance({ store, current: () => undefined })).get(pathOf(links.url(GUIDED)));
    expect(response.status).toBe(200);
    page = response.text;
  });

  test('lists under the reply the entries its prompt quoted and those that applied, named by category and first words, escaped', () => {
    const reply = /<li class="assistant"[^>]*>(?:(?!<\/li>).)*I am handing you(?:(?!<\/li>).)*<\/li>/s.exec(page)?.[0] ?? '';
    expect(reply).toContain(
      `<p class="guidance">Guidance quoted: ${QUOTED} (style): Greet &lt;b&gt;warmly&lt;/b&gt; &amp; sign off with the shop…; ` +
        `${APPLIED} (escalation): A refund over 100 pounds goes to support; ${REMOVED}</p>`,
    );
    expect(reply).toContain(`<p class="guidance">Guidance applied: ${APPLIED} (escalation): A refund over 100 pounds goes to support</p>`);
    expect(page).not.toContain('<b>warmly</b>');
    // On the reply's first part only; the customer's message and the second part carry none.
    expect(page.match(/class="guidance"/g)).toHaveLength(2);
  });

  test('whose names cannot be read still shows the ids, with a log line', async () => {
    const response = await appWith(links, undefined, async () => Promise.reject(new Error('guidance read failed'))).get(pathOf(links.url(GUIDED)));
    expect(response.status).toBe(200);
    expect(response.text).toContain(`<p class="guidance">Guidance applied: ${APPLIED}</p>`);
    expect(logs.some((line) => line.event === 'transcript-guidance-failed')).toBe(true);
  });
});
