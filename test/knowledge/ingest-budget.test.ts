/**
 * Reading a page or document is bounded in time and memory, off the event loop: HTML nested
 * thousands of levels deep and a PDF whose stream inflates past the cap are refused with the
 * reason (an upload's 415, a crawled page's error, the page left out); a page slower to read than
 * its budget is refused while the process's event loop keeps turning.
 */
import { deflateSync } from 'node:zlib';
import request from 'supertest';
import { readHtml } from '../../src/knowledge/extract-guard.js';
import { startHelpCenterSite, type HelpCenterSite } from '../support/help-center-site.js';
import { KNOWLEDGE_ADMIN_TOKEN, knowledgeMongoUri, ownKnowledgeRedisUrl, startKnowledgeRig, type KnowledgeRig } from '../support/knowledge-rig.js';

const auth = { Authorization: `Bearer ${KNOWLEDGE_ADMIN_TOKEN}` };
const nested = (levels: number) =>
  `<!doctype html><html><body>${'<div>'.repeat(levels)}<p>Deep inside the page there is a paragraph about kayak rental prices.</p>${'</div>'.repeat(levels)}</body></html>`;

/** A PDF with one Flate stream that inflates to `bytes` (a decompression bomb when large). */
function inflatingPdf(bytes: number): Buffer {
  const stream = deflateSync(Buffer.alloc(bytes, 0x20), { level: 9 });
  return Buffer.concat([
    Buffer.from(`%PDF-1.4\n1 0 obj\n<< /Length ${stream.length} /Filter /FlateDecode >>\nstream\n`, 'latin1'),
    stream,
    Buffer.from('\nendstream\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n', 'latin1'),
  ]);
}

describe('reading within a budget', () => {
  let rig: KnowledgeRig;
  let site: HelpCenterSite;

  beforeAll(async () => {
    rig = await startKnowledgeRig({ redisUrl: await ownKnowledgeRedisUrl(), mongoUri: knowledgeMongoUri() });
    site = await startHelpCenterSite();
  });
  afterAll(async () => {
    await rig?.close();
    await site?.close();
  });

  it('refuses an upload of HTML nested 2,000 levels deep, naming why', async () => {
    const response = await request(rig.app).post('/admin/knowledge/documents').set(auth).set('Content-Type', 'text/html').send(nested(2_000));
    expect(response.status).toBe(415);
    expect(response.body).toEqual({ error: 'the page nests its elements deeper than 400 levels' });
  });

  it('refuses a PDF whose stream inflates past the cap, before reading it', async () => {
    const response = await request(rig.app)
      .post('/admin/knowledge/documents')
      .set(auth)
      .set('Content-Type', 'application/pdf')
      .send(inflatingPdf(120 * 1024 * 1024));
    expect(response.status).toBe(415);
    expect(response.body).toEqual({ error: "the PDF's compressed content inflates to more than 100 MB" });
  });

  it('leaves out a crawled page nested too deep, listing why', async () => {
    site.setPage(
      '/deep-hub',
      '<!doctype html><html><head><title>Hub</title></head><body><p>Our rental guides, from kayaks to tents.</p><a href="/deep">Deep</a></body></html>',
    );
    site.setPage('/deep', nested(2_000));
    const added = await request(rig.app)
      .post('/admin/knowledge/sources')
      .set(auth)
      .send({ url: `${site.origin}/deep-hub`, include: ['/deep'] });
    const id = (added.body as { id: string }).id;
    let source: { lastCrawlAt?: string; errors: string[]; pages: number } | undefined;
    const deadline = Date.now() + 20_000;
    while (!source?.lastCrawlAt && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      source = ((await request(rig.app).get('/admin/knowledge').set(auth)).body as { sources: (typeof source & { id: string })[] }).sources.find(
        (entry) => entry?.id === id,
      );
    }
    expect(source).toMatchObject({ pages: 1, errors: [`${site.origin}/deep: unreadable (the page nests its elements deeper than 400 levels)`] });
  });

  it('refuses a page slower to read than its budget, the event loop turning meanwhile', async () => {
    const small = '<html><body><h1>Kayaks</h1><p>Kayaks rent for 40 euros a day at the harbour shop, paddles included.</p></body></html>';
    // A warm thread: the budget is spent on the page (390 levels: over a second), not on starting it.
    expect((await readHtml(small, 'https://help.example.com/k')).text).toContain('40 euros');
    let turns = 0;
    const ticker = setInterval(() => (turns += 1), 1);
    try {
      await expect(readHtml(nested(390), 'https://help.example.com/deep', undefined, { timeMs: 200 })).rejects.toThrow('reading it took longer than 200 ms');
    } finally {
      clearInterval(ticker);
    }
    expect(turns).toBeGreaterThan(0);
    // The next read gets a fresh thread.
    expect((await readHtml(small, 'https://help.example.com/k')).text).toContain('40 euros');
  });
});
