/**
 * A conversation's media on its transcript page, stored in GridFS on the MongoDB-wire server:
 * the page shows the photo inline (and Chromium really loads it under the page's CSP), the
 * voice note with a player and its transcription, the PDF as a download link; the media route
 * serves each file only with the page's valid signed link and only for that conversation —
 * typed by its content, nosniff, no caching, documents as attachments — and refuses everything
 * else without a byte of the file.
 */
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { Connection } from 'mongoose';
import request from 'supertest';
import { createApp } from '../../src/http/app.js';
import { createLogger } from '../../src/logger.js';
import type { MediaReference } from '../../src/media/inbound-media.js';
import { createMediaStore, type MediaStore } from '../../src/media/media-store.js';
import { createMetrics } from '../../src/metrics.js';
import { Redis } from 'ioredis';
import { createTranscriptOutbox, type TranscriptOutbox } from '../../src/store/outbox.js';
import { connectMongo, createTranscriptStore, type TranscriptStore } from '../../src/store/transcript-store.js';
import { createTranscriptWriter, type TranscriptWriter } from '../../src/store/transcript-writer.js';
import { createTranscriptLinks, type TranscriptLinks } from '../../src/transcripts/transcript-link.js';
import { createTranscriptMediaRouter } from '../../src/transcripts/transcript-media.js';
import { createTranscriptRouter } from '../../src/transcripts/transcript-router.js';
import { launchBrowser } from '../support/browser.js';
import { eventually, testEnv, type LogLine } from '../support/harness.js';
import { OGG_BYTES, PDF_BYTES, PNG_BYTES } from '../support/media-fixtures.js';

const SECRET = 'transcript-media-secret-for-tests-0123456789';
const BASE = 'https://assistant.example.test';
const CUSTOMER = 'web:harbour:visitor-1301:chat-1';
const OTHER_CUSTOMER = 'web:harbour:visitor-1302:chat-1';

let mongo: Connection;
let redis: Redis;
let outbox: TranscriptOutbox;
let writer: TranscriptWriter;
let transcripts: TranscriptStore;
let media: MediaStore;
let links: TranscriptLinks;
let app: ReturnType<typeof createApp>;
let http: ReturnType<typeof request>;
const logs: LogLine[] = [];
const ids: Record<'photo' | 'invoice' | 'voice' | 'otherPhoto', string> = { photo: '', invoice: '', voice: '', otherPhoto: '' };
let page: request.Response;

const pathOf = (link: string) => link.slice(BASE.length);

async function store(bytes: Buffer, contentType: string, conversationId: string, filename?: string): Promise<string> {
  const info = await media.put(Readable.from([bytes]), { contentType, conversationId, channel: 'web', ...(filename ? { filename } : {}) });
  return info.id;
}

async function storeMessage(conversationId: string, text: string, attached: MediaReference[]): Promise<void> {
  await transcripts.openConversation({ key: conversationId, channel: 'web', address: conversationId });
  await transcripts.recordInbound({
    conversationId,
    channel: 'web',
    channelMessageId: `${conversationId}:m1`,
    text,
    receivedAt: new Date(Date.now() - 60_000),
    media: attached,
  });
}

/** The `src` / `href` values the page gives, unescaped. */
function addresses(html: string, attribute: 'src' | 'href'): string[] {
  return [...html.matchAll(new RegExp(`\\s${attribute}="([^"]*)"`, 'g'))].map((match) => (match[1] ?? '').replaceAll('&amp;', '&'));
}

beforeAll(async () => {
  const env = testEnv('http://127.0.0.1:9');
  mongo = await connectMongo(env.MONGODB_URI!);
  redis = new Redis(env.REDIS_URL!);
  const quiet = createLogger({ level: 'error', sink: () => undefined });
  outbox = createTranscriptOutbox({ redis, maxBacklog: 1000, database: mongo.db!.databaseName, logger: quiet, metrics: createMetrics() });
  transcripts = createTranscriptStore(mongo, { redis, outbox });
  writer = createTranscriptWriter({ connection: mongo, outbox, batchSize: 100, logger: quiet, metrics: createMetrics() });
  await transcripts.ensureIndexes();
  media = createMediaStore(mongo, { maxBytes: 1024 * 1024 });
  links = createTranscriptLinks({ secret: SECRET, publicBaseUrl: BASE, ttlHours: 72 });
  const logger = createLogger({ level: 'debug', sink: (line) => logs.push(JSON.parse(line) as LogLine) });
  app = createApp({
    trustProxy: false,
    routers: [createTranscriptRouter({ links, transcripts, logger }), createTranscriptMediaRouter({ links, media, logger })],
    readiness: [],
    logger,
    metrics: createMetrics(),
    isShuttingDown: () => false,
  });
  http = request(app);

  ids.photo = await store(PNG_BYTES, 'image/png', CUSTOMER, 'cleat.png');
  ids.invoice = await store(PDF_BYTES, 'application/pdf', CUSTOMER, 'invoice "0412".pdf');
  ids.voice = await store(OGG_BYTES, 'audio/ogg', CUSTOMER);
  ids.otherPhoto = await store(PNG_BYTES, 'image/png', OTHER_CUSTOMER, 'private.png');
  await storeMessage(CUSTOMER, "(1 photo, 1 PDF, 1 voice note) what's wrong here?", [
    { id: ids.photo, contentType: 'image/png', kind: 'image', size: PNG_BYTES.length, filename: 'cleat.png' },
    { id: ids.invoice, contentType: 'application/pdf', kind: 'document', size: PDF_BYTES.length, filename: 'invoice "0412".pdf' },
    { id: ids.voice, contentType: 'audio/ogg', kind: 'audio', size: OGG_BYTES.length, transcription: 'The <cleat> broke this morning' },
  ]);
  await storeMessage(OTHER_CUSTOMER, '(1 photo)', [{ id: ids.otherPhoto, contentType: 'image/png', kind: 'image', size: PNG_BYTES.length }]);
  // The transcript reaches MongoDB (what the page reads) through the outbox, which the writer drains.
  writer.start();
  await eventually(async () => (await outbox.backlog()) === 0 || undefined);
  page = await http.get(pathOf(links.url(CUSTOMER)));
});

afterAll(async () => {
  await writer.close();
  redis.disconnect();
  await mongo.dropDatabase();
  await mongo.close();
});

describe('the transcript page', () => {
  test('shows the photo inline, the voice note with a player and its transcription, the PDF as a download link', () => {
    expect(page.status).toBe(200);
    const sources = addresses(page.text, 'src');
    const links_ = addresses(page.text, 'href');
    const signed = (id: string) =>
      expect.stringMatching(new RegExp(`^/transcripts/${encodeURIComponent(CUSTOMER)}/media/${id}\\?expires=\\d+&sig=[\\w-]{43}$`));
    expect(sources).toEqual([signed(ids.photo), signed(ids.voice)]);
    expect(links_).toEqual([signed(ids.photo), signed(ids.invoice)]);
    expect(page.text).toContain('alt="Photo: cleat.png"');
    expect(page.text).toMatch(
      /<audio controls preload="none" src="[^"]+"><\/audio><p class="transcription">Transcription: The &lt;cleat&gt; broke this morning<\/p>/,
    );
    expect(page.text).toContain(`download="invoice &quot;0412&quot;.pdf">Download invoice &quot;0412&quot;.pdf (`);
    expect(page.headers['content-security-policy']).toContain("img-src 'self'; media-src 'self'");
  });

  test('in a browser, the photo loads under the page CSP and nothing is refused', async () => {
    const chromium = await launchBrowser();
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const watched = await chromium.newPage();
      const { port } = server.address() as { port: number };
      // The browser's own favicon request is no part of the page.
      await watched.page.route('**/favicon.ico', (route) => route.fulfill({ status: 204 }));
      await watched.page.goto(`http://127.0.0.1:${port}${pathOf(links.url(CUSTOMER))}`);
      const image = watched.page.getByRole('img', { name: 'Photo: cleat.png' });
      await image.waitFor({ state: 'visible' });
      await watched.page.waitForFunction(() => {
        const element = (
          globalThis as unknown as { document: { querySelector(selector: string): { complete: boolean; naturalWidth: number } | null } }
        ).document.querySelector('img');
        return element !== null && element.complete && element.naturalWidth > 0;
      });
      expect(await watched.page.getByRole('link', { name: /^Download invoice "0412"\.pdf/ }).isVisible()).toBe(true);
      expect(watched.record.console).toEqual([]);
      expect(watched.record.pageErrors).toEqual([]);
      await watched.close();
    } finally {
      await chromium.close();
      server.close();
    }
  });
});

describe('the media route', () => {
  const signedPath = (id: string, conversationId = CUSTOMER) => {
    const link = new URL(links.url(conversationId));
    return `${link.pathname}/media/${id}${link.search}`;
  };

  test('serves the photo with the signed link: its bytes, typed by content, nosniff, uncached, inline', async () => {
    const response = await http.get(signedPath(ids.photo)).buffer(true);
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('image/png');
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.headers['content-disposition']).toBe('inline; filename="cleat.png"; filename*=UTF-8\'\'cleat.png');
    expect(response.headers['content-security-policy']).toBe("default-src 'none'; sandbox");
    expect(Buffer.from(response.body as Buffer)).toEqual(PNG_BYTES);
  });

  test('serves the PDF as a download under its own name', async () => {
    const response = await http.get(signedPath(ids.invoice)).buffer(true);
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/pdf');
    expect(response.headers['content-disposition']).toBe('attachment; filename="invoice _0412_.pdf"; filename*=UTF-8\'\'invoice%20%220412%22.pdf');
    expect(Buffer.from(response.body as Buffer)).toEqual(PDF_BYTES);
  });

  const expectRefused = (response: request.Response, status: number, text: string) => {
    expect(response.status).toBe(status);
    expect(response.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(response.text).toBe(`${text}\n`);
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.headers['x-content-type-options']).toBe('nosniff');
  };

  test('without the token, or with a tampered one, gets 403 and no bytes', async () => {
    expectRefused(await http.get(`/transcripts/${encodeURIComponent(CUSTOMER)}/media/${ids.photo}`), 403, 'This link is not valid');
    const tampered = signedPath(ids.photo).replace(/sig=(.)/, (_match, first: string) => `sig=${first === 'A' ? 'B' : 'A'}`);
    expectRefused(await http.get(tampered), 403, 'This link is not valid');
    expect(logs.at(-1)).toMatchObject({ event: 'transcript-media-rejected', reason: 'invalid' });
  });

  test("with one conversation's link, another conversation's media is not there (404)", async () => {
    expectRefused(await http.get(signedPath(ids.otherPhoto)), 404, 'This file is no longer available');
    expectRefused(await http.get(signedPath(ids.photo, OTHER_CUSTOMER)), 404, 'This file is no longer available');
    expect(logs.at(-1)).toMatchObject({ event: 'transcript-media-missing', conversationId: OTHER_CUSTOMER, mediaId: ids.photo });
  });

  test('an expired link gets 410; an unknown or malformed media id 404', async () => {
    const old = createTranscriptLinks({ secret: SECRET, publicBaseUrl: BASE, ttlHours: 72, now: () => Date.now() - 73 * 3600 * 1000 });
    const expired = new URL(old.url(CUSTOMER));
    expectRefused(await http.get(`${expired.pathname}/media/${ids.photo}${expired.search}`), 410, 'This link has expired');
    expectRefused(await http.get(signedPath('0123456789abcdef01234567')), 404, 'This file is no longer available');
    expectRefused(await http.get(signedPath('not-an-id')), 404, 'This file is no longer available');
  });
});
