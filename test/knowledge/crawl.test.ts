/**
 * A real crawl of a help center served on loopback: robots.txt (a disallowed page is never
 * fetched, though the sitemap and a link name it), the sitemap, a redirect (the page is known
 * by its final URL), a 404, a `noindex` page, a page that needs JavaScript, a canonical
 * duplicate, an injected instruction (dropped), main content only, at most 2 requests at a time;
 * then a re-crawl with conditional requests that updates a changed page and drops a vanished one.
 */
import request from 'supertest';
import { startHelpCenterSite, helpCenterLayout, helpCenterParagraph, type HelpCenterSite } from '../support/help-center-site.js';
import { KNOWLEDGE_ADMIN_TOKEN, knowledgeMongoUri, ownKnowledgeRedisUrl, startKnowledgeRig, type KnowledgeRig } from '../support/knowledge-rig.js';

const auth = { Authorization: `Bearer ${KNOWLEDGE_ADMIN_TOKEN}` };

interface Overview {
  sources: { id: string; pages: number; lastCrawlAt?: string; errors: string[] }[];
  pages: { url: string; title: string; chunks: number }[];
}

describe('crawling a help center', () => {
  let site: HelpCenterSite;
  let rig: KnowledgeRig;
  let sourceId: string;

  beforeAll(async () => {
    site = await startHelpCenterSite();
    rig = await startKnowledgeRig({ redisUrl: await ownKnowledgeRedisUrl(), mongoUri: knowledgeMongoUri() });
  });
  afterAll(async () => {
    await rig?.close();
    await site?.close();
  });

  const search = (query: string) => rig.feature.retrieve(query, { channel: 'whatsapp' });
  const overview = async () => (await request(rig.app).get('/admin/knowledge').set(auth)).body as Overview;

  it('adds a source through the admin API and crawls it politely, within robots.txt', async () => {
    const added = await request(rig.app)
      .post('/admin/knowledge/sources')
      .set(auth)
      .send({ url: `${site.origin}/` });
    expect(added.status).toBe(201);
    sourceId = (added.body as { id: string }).id;
    const until = Date.now() + 15_000;
    while (!(await overview()).sources.find((source) => source.id === sourceId)?.lastCrawlAt && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const listed = await overview();
    const source = listed.sources.find((entry) => entry.id === sourceId)!;
    expect(source.lastCrawlAt).toBeDefined();

    const paths = site.requests.map((entry) => entry.path);
    expect(paths).toContain('/robots.txt');
    expect(paths).toContain('/sitemap.xml');
    expect(paths).not.toContain('/private/staff');
    expect(paths).toEqual(expect.arrayContaining(['/drafts/new-policy', '/app', '/help/missing', '/old-sizes', '/sizes']));
    expect(site.maxInFlight()).toBeLessThanOrEqual(2);

    const urls = listed.pages.map((page) => page.url).sort();
    expect(urls).toEqual(
      [
        `${site.origin}/`,
        `${site.origin}/help/care`,
        `${site.origin}/help/returns`,
        `${site.origin}/help/shipping`,
        `${site.origin}/legal`,
        `${site.origin}/sizes`,
      ].sort(),
    );
    expect(source.pages).toBe(6);
  });

  it('indexes main content by heading, known by final and canonical URLs, without noindex pages or injected instructions', async () => {
    const refund = (await search('how long does a refund take'))[0]!;
    expect(refund).toMatchObject({ title: 'Returns and refunds', headingPath: ['How long does a refund take?'], url: `${site.origin}/help/returns` });
    expect(refund.text).toContain('5 to 7 business days');
    expect(refund.text).not.toMatch(/cookies|Northwind Outfitters ·|Home/);
    expect((await search('jackets run large smaller size'))[0]?.url).toBe(`${site.origin}/sizes`);
    expect(await search('lifetime warranty unconditionally')).toEqual([]);
    expect(await search('staff discount code')).toEqual([]);
    const care = await search('wash waterproof jacket');
    expect(care[0]?.url).toBe(`${site.origin}/help/care`);
    expect(care.map((passage) => passage.text).join(' ')).not.toMatch(/ignore all previous instructions|free today/i);
    expect(rig.logs.filter((line) => line.event === 'knowledge-steering-dropped').map((line) => line.url)).toContain(`${site.origin}/help/care`);
  });

  it('re-crawls with conditional requests, updating a changed page and dropping a vanished one', async () => {
    site.requests.splice(0);
    site.setPage(
      '/help/shipping',
      helpCenterLayout(
        'Shipping and delivery',
        '<h2>Delivery times</h2>' + helpCenterParagraph('Standard delivery within the United Kingdom now takes 1 to 2 business days with our new courier.'),
      ),
    );
    site.setPage('/help/returns', undefined);
    const crawled = await request(rig.app).post(`/admin/knowledge/sources/${sourceId}/crawl?wait=true`).set(auth);
    expect(crawled.status).toBe(200);
    expect(crawled.body).toMatchObject({ removed: 1 });
    expect((crawled.body as { unchanged: number }).unchanged).toBeGreaterThanOrEqual(3);
    expect(site.requests.filter((entry) => entry.conditional).length).toBeGreaterThanOrEqual(3);
    expect(site.requests.map((entry) => entry.path)).not.toContain('/private/staff');
    expect((await search('delivery United Kingdom business days'))[0]?.text).toContain('1 to 2 business days');
    expect(await search('refund original payment method')).toEqual([]);
    expect((await overview()).pages.map((page) => page.url)).not.toContain(`${site.origin}/help/returns`);
  });

  it('refuses a bad source with a reason', async () => {
    const response = await request(rig.app).post('/admin/knowledge/sources').set(auth).send({ url: 'ftp://example.com' });
    expect(response.status).toBe(400);
    const unknown = await request(rig.app).post('/admin/knowledge/sources/src_0123456789abcdef/crawl').set(auth);
    expect(unknown.status).toBe(404);
  });
});
