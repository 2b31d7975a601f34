/**
 * Configured sources (KNOWLEDGE_SOURCES) are registered and crawled at start, and re-crawled
 * once their last crawl is older than KNOWLEDGE_RECRAWL_HOURS; the variables parse as documented.
 */
import { EnvSchema } from '../../src/config.js';
import { startHelpCenterSite, type HelpCenterSite } from '../support/help-center-site.js';
import { knowledgeMongoUri, ownKnowledgeRedisUrl, startKnowledgeRig, type KnowledgeRig } from '../support/knowledge-rig.js';

async function until(check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('configured sources and the re-crawl schedule', () => {
  let site: HelpCenterSite;
  let rig: KnowledgeRig;

  beforeAll(async () => {
    site = await startHelpCenterSite();
    rig = await startKnowledgeRig({
      redisUrl: await ownKnowledgeRedisUrl(),
      mongoUri: knowledgeMongoUri(),
      config: { sources: [{ url: `${site.origin}/help/returns`, sites: ['whatsapp'], include: ['/help/*'] }], recrawlHours: 1 },
      scheduleEveryMs: 200,
    });
  });
  afterAll(async () => {
    await rig?.close();
    await site?.close();
  });

  it('crawls a configured source at start, for its audience and paths only, and again once it is due', async () => {
    const store = rig.feature.service.store;
    await until(async () => (await store.listSources())[0]?.lastCrawlAt !== undefined);
    const [source] = await store.listSources();
    expect(source).toMatchObject({ origin: 'config', url: `${site.origin}/help/returns` });
    expect(await rig.feature.retrieve('refund business days', { channel: 'whatsapp' })).not.toEqual([]);
    expect(await rig.feature.retrieve('refund business days', { channel: 'web', site: 'brand-a' })).toEqual([]);
    expect(site.requests.map((entry) => entry.path)).not.toContain('/legal');

    const first = source!.lastCrawlAt!;
    await store.putSource({ ...source!, lastCrawlAt: new Date(Date.now() - 2 * 3_600_000) });
    await until(async () => ((await store.getSource(source!._id))?.lastCrawlAt?.getTime() ?? 0) > first.getTime());
    expect(site.requests.filter((entry) => entry.conditional).length).toBeGreaterThan(0);
  });

  it('parses KNOWLEDGE_SOURCES and refuses what is not a list of sources', () => {
    const shape = EnvSchema.shape;
    expect(shape.KNOWLEDGE_SOURCES.safeParse('[{"url":"https://help.example.com","sites":["whatsapp"]}]').success).toBe(true);
    expect(shape.KNOWLEDGE_SOURCES.safeParse('[{"url":"ftp://x"}]').success).toBe(false);
    expect(shape.KNOWLEDGE_SOURCES.safeParse('{"url":"https://help.example.com"}').success).toBe(false);
    expect(shape.KNOWLEDGE_RECRAWL_HOURS.parse(undefined)).toBe(24);
  });
});
