/**
 * Retention by age beyond the transcripts: ratings, suggestions, unanswered questions and the
 * outbox's dead letters older than the cutoff go, a confirmed action keeps its outcome without
 * the person, and everything newer stays; each kind by its own period; and what Redis keeps of
 * old conversations (recent history, widget events, queue events) — on the real MongoDB and
 * Redis, through the purge the maintenance job runs.
 */
import { Readable } from 'node:stream';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import mongoose from 'mongoose';
import { KEY_PREFIX } from '../../src/redis.js';
import { purgeExpired, type CutoffOf } from '../../src/store/retention.js';
import { transcriptKeys } from '../../src/store/transcript-keys.js';
import { purgeByAge } from '../../src/people/retention.js';
import { startHarness, type Harness } from '../support/harness.js';
import { PNG_BYTES } from '../support/media-fixtures.js';

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness({ worker: false });
});
afterAll(() => harness.close());

const DAY = 24 * 3600 * 1000;

/** The people feature's purge, as the maintenance job runs it. */
const people = () => {
  const { mongo, redis } = harness.services;
  const stores = { connection: mongo, redis, database: mongo.db!.databaseName, queuePrefix: harness.queuePrefix };
  return { purgeOlderThan: (cutoffOf: CutoffOf) => purgeByAge(stores, cutoffOf) };
};

test('what is older than the retention period goes from every store; newer stays', async () => {
  const { mongo, redis, logger, metrics, transcripts, handoffs } = harness.services;
  const old = new Date(Date.now() - 40 * DAY);
  const recent = new Date();
  const db = (name: string) => mongo.collection<{ _id: string }>(name);
  await db('csat').insertMany([
    { _id: 'old-rating', conversationId: 'whatsapp:+440000700001', askedAt: old, comment: 'Old comment from Ivy' } as never,
    { _id: 'new-rating', conversationId: 'whatsapp:+440000700002', askedAt: recent, comment: 'New comment' } as never,
  ]);
  await db('knowledge_suggestions').insertMany([
    { _id: 'sug-old', exchange: 'Customer: Ivy here', createdAt: old } as never,
    { _id: 'sug-new', exchange: 'Customer: hello', createdAt: recent } as never,
  ]);
  await db('actions').insertMany([
    {
      _id: 'act-old',
      conversationId: 'whatsapp:+440000700001',
      tool: 'refund',
      state: 'done',
      summary: 'Refund Ivy',
      args: { order: '1' },
      updatedAt: old,
    } as never,
    { _id: 'act-new', conversationId: 'whatsapp:+440000700002', tool: 'refund', state: 'done', summary: 'Refund', args: {}, updatedAt: recent } as never,
  ]);
  const misses = 'asst:knowledge:misses';
  await redis.rpush(
    misses,
    JSON.stringify({ at: recent.toISOString(), role: 'support', question: 'new question' }),
    JSON.stringify({ at: old.toISOString(), role: 'support', question: 'Ivy asks' }),
  );
  const dead = transcriptKeys.deadLetters(harness.services.mongo.db!.databaseName);
  await redis.xadd(dead, `${old.getTime()}-0`, 'entry', 'old', 'reason', 'test');
  await redis.xadd(dead, `${recent.getTime()}-0`, 'entry', 'new', 'reason', 'test');

  const purged = await purgeExpired({ days: { transcripts: 30 }, transcripts, handoffs, others: [people()], logger, metrics });
  expect(purged).toMatchObject({ ratings: 1, suggestions: 1, actionsAnonymised: 1, misses: 1, deadLetters: 1 });
  expect((await db('csat').find({}).toArray()).map((record) => record._id)).toEqual(['new-rating']);
  expect((await db('knowledge_suggestions').find({}).toArray()).map((record) => record._id)).toEqual(['sug-new']);
  expect(await db('actions').findOne({ _id: 'act-old' })).toEqual({ _id: 'act-old', conversationId: 'expired', tool: 'refund', state: 'done', updatedAt: old });
  expect(await db('actions').findOne({ _id: 'act-new' })).toMatchObject({ summary: 'Refund' });
  expect((await redis.lrange(misses, 0, -1)).map((entry) => (JSON.parse(entry) as { question: string }).question)).toEqual(['new question']);
  expect((await redis.xrange(dead, '-', '+')).map(([, fields]) => fields[1])).toEqual(['new']);
});

test('each kind goes after its own period: shorter or longer than the transcripts', async () => {
  const { mongo, redis, logger, metrics, transcripts, handoffs, media } = harness.services;
  const ago = (days: number) => new Date(Date.now() - days * DAY);
  const db = (name: string) => mongo.collection<{ _id: string }>(name);
  const photo = async (days: number) => {
    const info = await media.put(Readable.from([PNG_BYTES]), { contentType: 'image/png', conversationId: 'whatsapp:+440000710001' });
    await mongo.collection('media.files').updateOne({ _id: mongoose.mongo.ObjectId.createFromHexString(info.id) }, { $set: { uploadDate: ago(days) } });
    return info.id;
  };
  const [oldPhoto, newPhoto] = [await photo(25), await photo(5)];
  await db('handoffs').insertMany([{ _id: 'ho-25', createdAt: ago(25) } as never, { _id: 'ho-15', createdAt: ago(15) } as never]);
  await db('knowledge_suggestions').insertMany([{ _id: 'sug-7', createdAt: ago(7) } as never, { _id: 'sug-3', createdAt: ago(3) } as never]);
  await db('csat').insertMany([{ _id: 'rating-55', askedAt: ago(55), comment: 'x' } as never, { _id: 'rating-40', askedAt: ago(40), comment: 'y' } as never]);
  const action = (id: string, days: number) => ({
    _id: id,
    conversationId: 'whatsapp:+440000710001',
    tool: 'refund',
    state: 'done',
    summary: 'Refund Ivy',
    updatedAt: ago(days),
  });
  await db('actions').insertMany([action('act-65', 65) as never, action('act-40', 40) as never]);
  const misses = 'asst:knowledge:misses';
  await redis.del(misses);
  await redis.rpush(misses, ...[20, 10].map((days) => JSON.stringify({ at: ago(days).toISOString(), role: 'support', question: `asked ${days} days ago` })));

  const days = { transcripts: 30, media: 10, handoffs: 20, suggestions: 5, misses: 15, ratings: 50, actions: 60 };
  await purgeExpired({ days, transcripts, handoffs, media, others: [people()], logger, metrics });

  expect(await media.info(oldPhoto)).toBeUndefined();
  expect(await media.info(newPhoto)).toBeDefined();
  const ids = async (name: string, filter: object) => (await db(name).find(filter).toArray()).map((record) => record._id).sort();
  expect(await ids('handoffs', { _id: { $in: ['ho-25', 'ho-15'] } })).toEqual(['ho-15']);
  expect(await ids('knowledge_suggestions', { _id: { $in: ['sug-7', 'sug-3'] } })).toEqual(['sug-3']);
  expect(await ids('csat', { _id: { $in: ['rating-55', 'rating-40'] } })).toEqual(['rating-40']);
  expect(await db('actions').findOne({ _id: 'act-65' })).not.toHaveProperty('summary');
  expect(await db('actions').findOne({ _id: 'act-40' })).toMatchObject({ summary: 'Refund Ivy', conversationId: 'whatsapp:+440000710001' });
  expect((await redis.lrange(misses, 0, -1)).map((entry) => (JSON.parse(entry) as { question: string }).question)).toEqual(['asked 10 days ago']);
});

test("Redis's copies of what the transcripts' period ended go: recent history, widget events and details, queue events", async () => {
  const { mongo, redis, logger, metrics, transcripts, handoffs } = harness.services;
  const ago = (days: number) => new Date(Date.now() - days * DAY);
  const [kept, forgotten, fresh] = ['whatsapp:+440000720001', 'whatsapp:+440000720002', 'web:site:v720003:c1'];
  await mongo
    .collection<{ _id: string }>('conversations')
    .insertOne({ _id: kept, channel: 'whatsapp', address: '+440000720001', updatedAt: new Date() } as never);
  const message = (id: string, days: number) => ({ _id: id, conversationId: kept, direction: 'inbound', text: id, createdAt: ago(days) });
  await mongo.collection<{ _id: string }>('messages').insertMany([message('in:whatsapp:SM720old', 40) as never, message('in:whatsapp:SM720new', 1) as never]);
  const entry = (id: string) => ({ id, direction: 'inbound', text: `words of ${id}` });
  const history = (ids: string[]) => JSON.stringify(ids.map(entry));
  await redis.hset(transcriptKeys.conversation(kept), {
    channel: 'whatsapp',
    createdAt: ago(60).toISOString(),
    recent: history(['in:whatsapp:SM720gone', 'in:whatsapp:SM720old', 'in:whatsapp:SM720new', 'in:whatsapp:SM720flight']),
  });
  await redis.hset(transcriptKeys.conversation(forgotten), {
    channel: 'whatsapp',
    address: '+440000720002',
    displayName: 'Ivy',
    createdAt: ago(40).toISOString(),
    customerAt: String(ago(40).getTime()),
    recent: history(['in:whatsapp:SM720purged']),
  });
  await redis.hset(transcriptKeys.conversation(fresh), { channel: 'web', createdAt: new Date().toISOString(), recent: history(['in:web:720flight']) });
  const events = `${KEY_PREFIX}:events:{${fresh}}`;
  await redis.xadd(events, `${ago(40).getTime()}-0`, 'type', 'message', 'data', '{"text":"old words"}');
  await redis.xadd(events, '*', 'type', 'message', 'data', '{"text":"new words"}');
  const details = `${KEY_PREFIX}:events-details:{${fresh}}`;
  await redis.hset(details, 'old', JSON.stringify({ at: ago(40).getTime(), text: 'old words' }), 'new', JSON.stringify({ at: Date.now(), text: 'new words' }));
  const queueEvents = `${harness.queuePrefix}:turns:events`;
  await redis.xadd(queueEvents, `${ago(40).getTime()}-0`, 'event', 'added', 'jobId', 'old');
  await redis.xadd(queueEvents, '*', 'event', 'added', 'jobId', 'new');

  const purged = await purgeExpired({ days: { transcripts: 30 }, transcripts, handoffs, others: [people()], logger, metrics });

  expect(purged).toMatchObject({ recentHistory: 3, widgetEvents: 1, widgetDetails: 1, queueEvents: 1 });
  expect((await transcripts.recent(kept)).map((recent) => recent.id)).toEqual(['in:whatsapp:SM720new', 'in:whatsapp:SM720flight']);
  expect(await redis.exists(transcriptKeys.conversation(forgotten))).toBe(0);
  expect((await transcripts.recent(fresh)).map((recent) => recent.id)).toEqual(['in:web:720flight']);
  expect((await redis.xrange(events, '-', '+')).map(([, fields]) => fields[3])).toEqual(['{"text":"new words"}']);
  expect(Object.keys(await redis.hgetall(details))).toEqual(['new']);
  expect((await redis.xrange(queueEvents, '-', '+')).map(([, fields]) => fields[3])).toEqual(['new']);
});
