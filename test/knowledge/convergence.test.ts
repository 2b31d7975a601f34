/**
 * Every process's index converges on MongoDB's knowledge, on real Redis and FerretDB: a change
 * whose announcement on the stream failed stays written and reaches another process by its
 * periodic check; a process whose stream vanished (Redis lost it) re-reads what it missed at
 * once; a follower that finds the stream trimmed past it, started over, or an entry it could not
 * apply, says so; `GET /admin/knowledge` lists each process's index version against the store's;
 * the index built at start leaves out chunks no owner lists (a writer that died between its
 * chunks and its owner).
 */
import { Redis } from 'ioredis';
import request from 'supertest';
import { followChanges, type GapReason, type KnowledgeChange } from '../../src/knowledge/changes.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { KNOWLEDGE_ADMIN_TOKEN, knowledgeMongoUri, ownKnowledgeRedisUrl, startKnowledgeRig, type KnowledgeRig } from '../support/knowledge-rig.js';

const auth = { Authorization: `Bearer ${KNOWLEDGE_ADMIN_TOKEN}` };
const STREAM = 'asst:knowledge:changes';
const HOUR = 3_600_000;

const until = async (check: () => Promise<boolean> | boolean, ms = 15_000) => {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

describe('knowledge indexes that converge on MongoDB', () => {
  let redisUrl: string;
  let mongoUri: string;
  const rigs: KnowledgeRig[] = [];
  let writer: KnowledgeRig;

  beforeAll(async () => {
    redisUrl = await ownKnowledgeRedisUrl();
    mongoUri = knowledgeMongoUri();
    writer = await startKnowledgeRig({ redisUrl, mongoUri, syncEveryMs: HOUR });
    rigs.push(writer);
  });
  afterAll(async () => {
    for (const rig of rigs) await rig.close();
  });

  const reader = async (syncEveryMs: number) => {
    const rig = await startKnowledgeRig({ redisUrl, mongoUri, syncEveryMs });
    rigs.push(rig);
    return rig;
  };
  const addFaq = (rig: KnowledgeRig, question: string, answer: string) => request(rig.app).post('/admin/knowledge/faq').set(auth).send({ question, answer });
  const titles = async (rig: KnowledgeRig, query: string) => (await rig.feature.retrieve(query, { channel: 'whatsapp' })).map((passage) => passage.title);
  /** The stream key made unusable, so announcing a change fails (what a Redis error does to XADD). */
  const breakStream = () => writer.redis.multi().del(STREAM).set(STREAM, 'not a stream').exec();

  it('gets a change whose announcement failed by its periodic check, and lists each process in sync', async () => {
    const other = await reader(300);
    expect((await addFaq(writer, 'Do you sell gift cards?', 'Gift cards from 10 to 200 euros, valid two years.')).status).toBe(201);
    await until(async () => (await titles(other, 'gift cards')).includes('Do you sell gift cards?'));

    await breakStream();
    const added = await addFaq(writer, 'Can I rent a kayak?', 'Kayaks rent for 40 euros a day at the harbour shop.');
    expect(added.status).toBe(201);
    expect(writer.logs.some((line) => line.event === 'knowledge-announce-failed')).toBe(true);
    // The stream works again, without the lost announcement and without a gap the follower could see.
    await writer.redis.multi().del(STREAM).xadd(STREAM, '*', 'op', 'delete', 'owner', 'doc:faq_0000000000000000').exec();

    await until(async () => (await titles(other, 'rent a kayak')).includes('Can I rent a kayak?'));
    expect(other.metrics.value('knowledge_index_resyncs_total', { reason: 'check' })).toBeGreaterThanOrEqual(1);
    await until(() => other.metrics.gaugeValue('knowledge_index_in_sync') === 1);

    interface Worker {
      process: string;
      version: string;
      storeVersion: string;
      inSync: boolean;
      chunks: number;
    }
    let workers: Worker[] = [];
    await until(async () => {
      workers = ((await request(writer.app).get('/admin/knowledge').set(auth)).body as { workers: Worker[] }).workers;
      return workers.length === 2 && workers.some((worker) => worker.chunks === 2 && worker.inSync);
    });
    const synced = workers.find((worker) => worker.chunks === 2)!;
    expect(synced.version).toBe(synced.storeVersion);
    expect(synced.version).toMatch(/^2-[0-9a-f]{16}$/);
  });

  it('re-reads at once what it missed when the stream vanished (Redis lost it)', async () => {
    const other = await reader(HOUR);
    expect((await addFaq(writer, 'Is there parking?', 'Free parking behind the shop for two hours.')).status).toBe(201);
    await until(async () => (await titles(other, 'parking')).includes('Is there parking?'));

    await breakStream();
    expect((await addFaq(writer, 'Do you repair zips?', 'Zip repairs take a week and cost 15 euros.')).status).toBe(201);
    await writer.redis.del(STREAM);

    await until(async () => (await titles(other, 'repair zips')).includes('Do you repair zips?'));
    expect(other.metrics.value('knowledge_change_gaps_total', { reason: 'stream-reset' })).toBeGreaterThanOrEqual(1);
  });
});

describe('the index built at start', () => {
  const rigs: KnowledgeRig[] = [];
  afterAll(async () => {
    for (const rig of rigs) await rig.close();
  });

  it('indexes the chunks owners list, not those of a writer that died before writing their owner', async () => {
    const redisUrl = await ownKnowledgeRedisUrl();
    const mongoUri = knowledgeMongoUri();
    const writer = await startKnowledgeRig({ redisUrl, mongoUri, syncEveryMs: HOUR });
    rigs.push(writer);
    expect(
      (
        await request(writer.app)
          .post('/admin/knowledge/faq')
          .set(auth)
          .send({ question: 'Do you repair zips?', answer: 'Zip repairs take a week and cost 15 euros.' })
      ).status,
    ).toBe(201);
    await writer.connection.collection('knowledge_chunks').insertOne({
      _id: 'doc:faq_00000000deadbeef#0',
      owner: 'doc:faq_00000000deadbeef',
      title: 'Snorkel hire',
      headingPath: [],
      url: '',
      text: 'Snorkel sets hire for 8 euros a day at the beach kiosk.',
      sites: [],
    } as never);
    const fresh = await startKnowledgeRig({ redisUrl, mongoUri, syncEveryMs: HOUR });
    rigs.push(fresh);
    const titles = async (query: string) => (await fresh.feature.retrieve(query, { channel: 'whatsapp' })).map((passage) => passage.title);
    expect(await titles('snorkel hire')).toEqual([]);
    expect(await titles('repair zips')).toContain('Do you repair zips?');
  });
});

describe('the change follower', () => {
  let redis: Redis;
  const logger = createLogger({ level: 'error', sink: () => undefined });

  beforeAll(async () => {
    redis = new Redis(await ownKnowledgeRedisUrl());
  });
  afterAll(() => redis?.disconnect());

  const follow = (from: string, apply: (change: KnowledgeChange) => Promise<void>) => {
    const gaps: GapReason[] = [];
    const applied: string[] = [];
    const follower = followChanges(
      redis,
      from,
      async (change) => {
        applied.push(change.owner);
        await apply(change);
      },
      { logger, metrics: createMetrics(), onGap: (reason) => gaps.push(reason) },
    );
    return { gaps, applied, follower };
  };

  it('says when the stream was trimmed past it, started over below it, or an entry failed to apply', async () => {
    await redis.del(STREAM);
    const first = (await redis.xadd(STREAM, '*', 'op', 'upsert', 'owner', 'doc:a'))!;
    await redis.xadd(STREAM, '*', 'op', 'upsert', 'owner', 'doc:b');
    await redis.xtrim(STREAM, 'MAXLEN', 0);
    const trimmed = follow(first, async () => undefined);
    await until(() => trimmed.gaps.length > 0);
    expect(trimmed.gaps).toEqual(['trimmed']);
    await redis.xadd(STREAM, '*', 'op', 'upsert', 'owner', 'doc:bad');
    await until(() => trimmed.applied.includes('doc:bad'));
    await trimmed.follower.close();

    const ahead = follow('99999999999999-0', async (change) => {
      if (change.owner === 'doc:bad') throw new Error('MongoDB did not answer');
    });
    await redis.xadd(STREAM, '*', 'op', 'upsert', 'owner', 'doc:c');
    await until(() => ahead.applied.includes('doc:c'));
    expect(ahead.gaps).toEqual(['stream-reset', 'apply-failed']);
    await ahead.follower.close();
  });
});
