/**
 * A crawl never destroys on doubt, driven through the admin API against a help center on
 * loopback: robots.txt answering 503, a start page answering 503 and a hub page failing once keep
 * every page of the last crawl (the crawl is recorded failed, with the reason in the listing); a
 * re-crawl answered 304 follows every stored link of a page with more than 200; a source removed
 * while its crawl runs stays removed, with none of its pages; a source URL with a password or on
 * plain http to another host is refused when it is added.
 */
import request from 'supertest';
import { helpCenterLayout, helpCenterParagraph, startHelpCenterSite, type HelpCenterSite } from '../support/help-center-site.js';
import { KNOWLEDGE_ADMIN_TOKEN, knowledgeMongoUri, ownKnowledgeRedisUrl, startKnowledgeRig, type KnowledgeRig } from '../support/knowledge-rig.js';

const auth = { Authorization: `Bearer ${KNOWLEDGE_ADMIN_TOKEN}` };

interface Overview {
  sources: { id: string; url: string; pages: number; lastCrawlAt?: string; lastCrawl?: string; errors: string[] }[];
  pages: { url: string }[];
}
interface Report {
  outcome: string;
  pages: number;
  removed: number;
  errors: string[];
}

const MANY = 210;

describe('a crawl that never destroys on doubt', () => {
  let site: HelpCenterSite;
  let rig: KnowledgeRig;
  let sourceId: string;

  beforeAll(async () => {
    site = await startHelpCenterSite();
    // A hub linked from the start page, and a page linked from the hub only.
    site.setPage(
      '/help/guides',
      helpCenterLayout('Guides', helpCenterParagraph('Our guides for outdoor gear, from boots to tents.') + '<a href="/help/guides/boots">Boots</a>'),
    );
    site.setPage(
      '/help/guides/boots',
      helpCenterLayout('Breaking in hiking boots', helpCenterParagraph('Wear new hiking boots at home for a week before a long walk.')),
    );
    site.setPage(
      '/',
      helpCenterLayout(
        'Northwind Help Center',
        helpCenterParagraph('Welcome to the Northwind Outfitters help center, with answers about orders and returns.') +
          '<a href="/help/returns">Returns</a> <a href="/sizes">Sizes</a> <a href="/help/guides">Guides</a> <a href="/help/care">Care</a>',
      ),
    );
    rig = await startKnowledgeRig({
      redisUrl: await ownKnowledgeRedisUrl(),
      mongoUri: knowledgeMongoUri(),
      config: { crawl: { maxPages: 300, maxDepth: 4, maxPageBytes: 1024 * 1024, maxCrawlBytes: 20 * 1024 * 1024, timeoutMs: 5_000 } },
    });
    const added = await request(rig.app)
      .post('/admin/knowledge/sources')
      .set(auth)
      .send({ url: `${site.origin}/`, exclude: ['/many'] });
    expect(added.status).toBe(201);
    sourceId = (added.body as { id: string }).id;
    await until(async () => (await overview()).sources.some((source) => source.id === sourceId && source.lastCrawlAt !== undefined));
  });
  afterAll(async () => {
    await rig?.close();
    await site?.close();
  });

  const overview = async () => (await request(rig.app).get('/admin/knowledge').set(auth)).body as Overview;
  const pageUrls = async () => (await overview()).pages.map((page) => page.url.replace(site.origin, '')).sort();
  const recrawl = async (id = sourceId) => {
    const response = await request(rig.app).post(`/admin/knowledge/sources/${id}/crawl?wait=true`).set(auth);
    expect(response.status).toBe(200);
    return response.body as Report;
  };
  const until = async (check: () => Promise<boolean>, ms = 20_000) => {
    const deadline = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error('timed out');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const titles = async (query: string) => (await rig.feature.retrieve(query, { channel: 'whatsapp' })).map((passage) => passage.title);

  const FIRST_CRAWL = ['/', '/help/care', '/help/guides', '/help/guides/boots', '/help/returns', '/help/shipping', '/legal', '/sizes'];

  it('crawls the help center once', async () => {
    expect(await pageUrls()).toEqual(FIRST_CRAWL);
    expect((await overview()).sources.find((source) => source.id === sourceId)).toMatchObject({ pages: FIRST_CRAWL.length, errors: [] });
  });

  it('keeps every page when robots.txt answers 503, and records the crawl failed with the reason', async () => {
    site.setStatus('/robots.txt', 503);
    try {
      const report = await recrawl();
      expect(report).toMatchObject({ outcome: 'failed', removed: 0, pages: FIRST_CRAWL.length });
      expect(report.errors[0]).toMatch(/robots\.txt could not be read \(answered 503\)/);
    } finally {
      site.setStatus('/robots.txt', undefined);
    }
    expect(await pageUrls()).toEqual(FIRST_CRAWL);
    expect(await titles('how long does a refund take')).toContain('Returns and refunds');
    const listed = (await overview()).sources.find((source) => source.id === sourceId)!;
    expect(listed).toMatchObject({ lastCrawl: 'failed', pages: FIRST_CRAWL.length });
    expect(listed.errors[0]).toMatch(/robots\.txt could not be read/);
  });

  it('keeps every page when the start page answers 503', async () => {
    site.setStatus('/', 503);
    try {
      const report = await recrawl();
      expect(report).toMatchObject({ outcome: 'failed', removed: 0 });
      expect(report.errors[0]).toMatch(/the start page could not be read \(answered 503\)/);
    } finally {
      site.setStatus('/', undefined);
    }
    expect(await pageUrls()).toEqual(FIRST_CRAWL);
    expect(await titles('breaking in hiking boots')).toContain('Breaking in hiking boots');
  });

  it('follows the stored links of a page that failed, so a page linked only from it stays', async () => {
    site.setStatus('/help/guides', 503);
    try {
      const report = await recrawl();
      expect(report).toMatchObject({ outcome: 'errors', removed: 0 });
      expect(report.errors).toEqual([expect.stringMatching(/\/help\/guides: answered 503$/)]);
    } finally {
      site.setStatus('/help/guides', undefined);
    }
    expect(await pageUrls()).toEqual(FIRST_CRAWL);
    expect(await titles('breaking in hiking boots')).toContain('Breaking in hiking boots');
  });

  it('removes a page once a completed crawl saw the site answer and nothing links to it', async () => {
    site.setPage('/help/guides', helpCenterLayout('Guides', helpCenterParagraph('Our guides for outdoor gear, from boots to tents, are being rewritten.')));
    const report = await recrawl();
    expect(report).toMatchObject({ outcome: 'ok', removed: 1 });
    expect(await pageUrls()).toEqual(FIRST_CRAWL.filter((path) => path !== '/help/guides/boots'));
    expect(await titles('breaking in hiking boots')).not.toContain('Breaking in hiking boots');
  });

  it('follows every stored link of a page answered 304, past the first 200', async () => {
    const links = Array.from({ length: MANY }, (_, n) => `<a href="/many/${n}">Item ${n}</a>`).join(' ');
    site.setPage('/many', helpCenterLayout('Catalogue', helpCenterParagraph('Every item of the catalogue, one page each, with its care notes.') + links));
    for (let n = 0; n < MANY; n += 1) {
      site.setPage(`/many/${n}`, helpCenterLayout(`Item ${n}`, helpCenterParagraph(`Catalogue item number ${n} is a waterproof jacket in size ${n % 7}.`)));
    }
    const added = await request(rig.app)
      .post('/admin/knowledge/sources')
      .set(auth)
      .send({ url: `${site.origin}/many`, include: ['/many'] });
    const manyId = (added.body as { id: string }).id;
    await until(async () => (await overview()).sources.find((source) => source.id === manyId)?.lastCrawlAt !== undefined, 60_000);
    expect((await overview()).sources.find((source) => source.id === manyId)).toMatchObject({ pages: MANY + 1, errors: [] });

    site.requests.splice(0);
    const report = await recrawl(manyId);
    expect(site.requests.find((entry) => entry.path === '/many')?.conditional).toBe(true);
    expect(report).toMatchObject({ outcome: 'ok', removed: 0, pages: MANY + 1 });
    expect((await overview()).sources.find((source) => source.id === manyId)?.pages).toBe(MANY + 1);
    // Two crawls of 211 pages, each read in the reader thread: past Jest's 30 s on a loaded machine.
  }, 150_000);

  it('removes a source whose crawl is running: the removal wins and none of its pages come back', async () => {
    const release = site.hold('/help/care');
    const lock = `asst:knowledge:crawl:${sourceId}`;
    try {
      const started = await request(rig.app).post(`/admin/knowledge/sources/${sourceId}/crawl`).set(auth);
      expect(started.status).toBe(202);
      await until(async () => site.requests.some((entry) => entry.path === '/help/care') && (await rig.redis.exists(lock)) === 1);
      const removal = request(rig.app)
        .delete(`/admin/knowledge/sources/${sourceId}`)
        .set(auth)
        .then((response) => response.status);
      // The removal tells the running crawl to stop (where it does), then the held page answers.
      await until(async () => (await rig.redis.exists(`asst:knowledge:crawl-stop:${sourceId}`)) === 1, 3_000).catch(() => undefined);
      release();
      expect(await removal).toBe(204);
    } finally {
      release();
    }
    await until(async () => (await rig.redis.exists(lock)) === 0);
    const listed = await overview();
    expect(listed.sources.map((source) => source.id)).not.toContain(sourceId);
    expect(listed.pages.map((page) => page.url).filter((url) => !url.includes('/many'))).toEqual([]);
    expect(await titles('how long does a refund take')).toEqual([]);
  });

  it('refuses a source URL with a user name and password, or on plain http to another host, naming why', async () => {
    const secret = await request(rig.app).post('/admin/knowledge/sources').set(auth).send({ url: 'https://owner:hunter2@help.example.com/' });
    expect(secret.status).toBe(400);
    expect(secret.body).toEqual({
      error: 'invalid source',
      issues: [{ path: 'url', message: 'a source URL cannot carry a user name or password: the crawl sends none' }],
    });
    const plain = await request(rig.app).post('/admin/knowledge/sources').set(auth).send({ url: 'http://10.0.0.5/help' });
    expect(plain.status).toBe(400);
    expect(plain.body).toEqual({
      error: 'invalid source',
      issues: [{ path: 'url', message: 'expected https: plain http is read from a loopback test server only' }],
    });
    expect((await overview()).sources.map((source) => source.url)).toEqual([`${site.origin}/many`]);
    expect(JSON.stringify(rig.logs)).not.toContain('hunter2');
  });
});
