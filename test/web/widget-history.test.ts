/**
 * Issue 29: what a reload reads back, and how the script is served. The history gives every
 * message its time; a visitor's message with attachments comes back with the text they typed
 * (not the "(1 photo, 1 PDF) …" the model reads) and each file as a signed link the widget can
 * fetch from any site (a forged or expired link is a 403). `/widget.js` is the script itself,
 * compressed, never a redirect.
 */
import { get, type Server } from 'node:http';
import { gunzipSync, brotliDecompressSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { buildWidget } from '../../scripts/build-widget.js';
import { staleDetails } from '../../channels/web/history.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { PDF_BYTES, PNG_BYTES } from '../support/media-fixtures.js';
import { turnsSettled } from '../support/settled.js';

const SHOP = 'https://history-shop.example.test';
const SITES = JSON.stringify([{ key: 'history-site', name: 'Harbour Lane', origins: [SHOP], greeting: 'Hi!', language: 'en' }]);
const REPLY = 'I can see the damage: we will replace the cleat.';

let harness: Harness;

beforeAll(async () => {
  harness = await startHarness({ env: { WEB_SITES: SITES }, script: () => ({ text: REPLY }) });
});
afterAll(() => harness.close());

async function session(): Promise<{ token: string; conversationId: string }> {
  const response = await harness.http.post('/api/widget/session').set('Origin', SHOP).send({ siteKey: 'history-site' });
  return response.body as { token: string; conversationId: string };
}

const upload = async (token: string, body: Buffer, name: string, type: string): Promise<string> => {
  const response = await harness.http
    .post(`/api/widget/uploads?name=${encodeURIComponent(name)}`)
    .set('Origin', SHOP)
    .set('Content-Type', type)
    .set('Authorization', `Bearer ${token}`)
    .send(body);
  expect(response.status).toBe(201);
  return response.body.id as string;
};

interface HistoryEntry {
  id: string;
  role: string;
  text: string;
  at?: number;
  attachments?: { id: string; kind: string; name?: string; url: string }[];
}

const history = async (token: string): Promise<HistoryEntry[]> =>
  (await harness.http.get('/api/widget/history').set('Origin', SHOP).set('Authorization', `Bearer ${token}`)).body.messages as HistoryEntry[];

describe('history after a reload', () => {
  test('gives times, the visitor’s own text and signed links to their attachments', async () => {
    const visitor = await session();
    const photo = await upload(visitor.token, PNG_BYTES, 'damage.png', 'image/png');
    const pdf = await upload(visitor.token, PDF_BYTES, 'invoice.pdf', 'application/pdf');
    const before = Date.now();
    const posted = await harness.http
      .post('/api/widget/messages')
      .set('Origin', SHOP)
      .set('Authorization', `Bearer ${visitor.token}`)
      .send({ clientMessageId: 'history-client-1', text: 'Here is a photo of the damage', attachments: [photo, pdf] });
    expect(posted.status).toBe(202);
    await eventually(async () => ((await history(visitor.token)).length >= 2 ? true : undefined), 20_000);
    await turnsSettled(harness.services);
    const messages = await history(visitor.token);
    expect(messages).toHaveLength(2);
    const [mine, reply] = messages as [HistoryEntry, HistoryEntry];
    expect(mine).toMatchObject({ id: 'history-client-1', role: 'visitor', text: 'Here is a photo of the damage' });
    expect(mine.at).toBeGreaterThanOrEqual(before);
    expect(mine.attachments).toEqual([
      { id: photo, kind: 'image', name: 'damage.png', url: expect.stringMatching(/^\/api\/widget\/media\/[^?]+\?expires=\d+&sig=/) },
      { id: pdf, kind: 'document', name: 'invoice.pdf', url: expect.stringMatching(/^\/api\/widget\/media\//) },
    ]);
    expect(reply).toMatchObject({ role: 'assistant', text: REPLY });
    expect(reply.at).toBeGreaterThanOrEqual(mine.at ?? Infinity);

    // The links work from a page on the site's origin (the widget fetches thumbnails), without a token.
    const image = await harness.http
      .get(mine.attachments?.[0]?.url ?? '')
      .set('Origin', SHOP)
      .buffer(true);
    expect(image.status).toBe(200);
    expect(image.headers['content-type']).toBe('image/png');
    expect(image.headers['access-control-allow-origin']).toBe('*');
    expect(Buffer.compare(image.body as Buffer, PNG_BYTES)).toBe(0);
    const document = await harness.http.get(mine.attachments?.[1]?.url ?? '');
    expect(document.status).toBe(200);
    expect(document.headers['content-disposition']).toMatch(/^attachment; filename="invoice.pdf"/);
  });

  test('a forged, retargeted or expired media link is refused', async () => {
    const visitor = await session();
    const photo = await upload(visitor.token, PNG_BYTES, 'other.png', 'image/png');
    await harness.http
      .post('/api/widget/messages')
      .set('Origin', SHOP)
      .set('Authorization', `Bearer ${visitor.token}`)
      .send({ clientMessageId: 'history-client-2', text: '', attachments: [photo] });
    const [mine] = await eventually(async () => {
      const messages = await history(visitor.token);
      return messages[0]?.attachments ? messages : undefined;
    }, 20_000);
    const url = new URL(mine?.attachments?.[0]?.url ?? '', 'http://x');
    expect(mine?.text).toBe('');
    const forged = `${url.pathname}?expires=${url.searchParams.get('expires')}&sig=${'A'.repeat(43)}`;
    expect((await harness.http.get(forged)).status).toBe(403);
    const retargeted = `/api/widget/media/${'0'.repeat(24)}${url.search}`;
    expect((await harness.http.get(retargeted)).status).toBe(403);
    const expired = `${url.pathname}?expires=${Date.now() - 1000}&sig=${url.searchParams.get('sig')}`;
    expect((await harness.http.get(expired)).status).toBe(403);
    await turnsSettled(harness.services);
  });

  test('a message stored before its details were kept loses the media summary in front of its text', async () => {
    const visitor = await session();
    const conversation = visitor.conversationId;
    const chatId = conversation.split(':').at(-1);
    await harness.services.transcripts.saveRecent(conversation, [
      { id: `in:web:${chatId}:old-client-1`, direction: 'inbound', text: '(1 photo, 1 PDF) Old caption' },
    ]);
    const messages = await history(visitor.token);
    expect(messages).toEqual([{ id: 'old-client-1', role: 'visitor', text: 'Old caption' }]);
  });
});

describe('details stay bounded like the history', () => {
  test('those of messages older than the history shows are dropped; a newer one still waiting for its turn stays', () => {
    const details = new Map([
      ['gone', { at: 1_000 }],
      ['kept', { at: 2_000 }],
      ['out:web:c:kept#0', { at: 2_100 }],
      ['waiting', { at: 3_000 }],
    ]);
    const shown = [
      { id: 'in:web:c:kept', direction: 'inbound' as const, text: 'hi' },
      { id: 'out:web:c:kept#0', direction: 'outbound' as const, text: 'hello' },
    ];
    expect(staleDetails(details, shown)).toEqual(['gone']);
    expect(staleDetails(details, [])).toEqual([]);
  });
});

describe('a message the service gave up on', () => {
  test('its apology is marked failed, naming the visitor message to try again', async () => {
    const visitor = await session();
    const chatId = visitor.conversationId.split(':').at(-1);
    await harness.services.transcripts.saveRecent(visitor.conversationId, [
      { id: `in:web:${chatId}:lost-client-1`, direction: 'inbound', text: 'Can you check my booking?' },
      { id: `out:web:${chatId}:lost-client-1#99`, direction: 'outbound', text: 'Sorry, something went wrong on our side.' },
    ]);
    expect(await history(visitor.token)).toEqual([
      { id: 'lost-client-1', role: 'visitor', text: 'Can you check my booking?' },
      { id: `out:web:${chatId}:lost-client-1#99`, role: 'assistant', text: 'Sorry, something went wrong on our side.', failed: true, replyTo: 'lost-client-1' },
    ]);
  });
});

describe('the script', () => {
  test('/widget.js is the script itself, compressed, with no redirect', async () => {
    const { code, version } = await buildWidget();
    // The compressed bytes as sent (supertest would inflate them).
    const raw = async (encoding: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> => {
      const address = await new Promise<string>((resolve) => {
        const server = harness.services.app.listen(0, '127.0.0.1', () => {
          const { port } = server.address() as { port: number };
          resolve(`http://127.0.0.1:${port}`);
          servers.push(server);
        });
      });
      return new Promise((resolve, reject) => {
        get(`${address}/widget.js`, { headers: { 'Accept-Encoding': encoding } }, (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }));
        }).on('error', reject);
      });
    };
    const servers: Server[] = [];
    try {
      const gzip = await raw('gzip');
      expect(gzip.status).toBe(200);
      expect(gzip.headers['content-encoding']).toBe('gzip');
      expect(gzip.headers.etag).toBe(`"${version}"`);
      expect(gunzipSync(gzip.body).toString()).toBe(code);
      // The budget: 20 KiB (the chat itself is a lazily loaded part, widget-parts.test.ts).
      expect(Number(gzip.headers['content-length'])).toBeLessThanOrEqual(20 * 1024);
      const brotli = await raw('br, gzip');
      expect(brotli.headers['content-encoding']).toBe('br');
      expect(brotliDecompressSync(brotli.body).toString()).toBe(code);
    } finally {
      for (const server of servers) server.close();
    }
    const cached = await harness.http.get('/widget.js').set('If-None-Match', `"${version}"`);
    expect(cached.status).toBe(304);
  });
});
