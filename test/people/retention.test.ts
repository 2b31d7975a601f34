/**
 * Retention by age beyond the transcripts: ratings, suggestions, unanswered questions and the
 * outbox's dead letters older than the cutoff go, a confirmed action keeps its outcome without
 * the person, and everything newer stays — on the real MongoDB and Redis, through the purge the
 * maintenance job runs.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { purgeExpired } from '../../src/store/retention.js';
import { transcriptKeys } from '../../src/store/transcript-keys.js';
import { purgeByAge } from '../../src/people/retention.js';
import { startHarness, type Harness } from '../support/harness.js';

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness({ worker: false });
});
afterAll(() => harness.close());

const DAY = 24 * 3600 * 1000;

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

  const purged = await purgeExpired({
    retentionDays: 30,
    transcripts,
    handoffs,
    others: [{ purgeOlderThan: (cutoff) => purgeByAge(mongo, redis, harness.services.mongo.db!.databaseName, cutoff) }],
    logger,
    metrics,
  });
  expect(purged).toMatchObject({ ratings: 1, suggestions: 1, actionsAnonymised: 1, misses: 1, deadLetters: 1 });
  expect((await db('csat').find({}).toArray()).map((record) => record._id)).toEqual(['new-rating']);
  expect((await db('knowledge_suggestions').find({}).toArray()).map((record) => record._id)).toEqual(['sug-new']);
  expect(await db('actions').findOne({ _id: 'act-old' })).toEqual({ _id: 'act-old', conversationId: 'expired', tool: 'refund', state: 'done', updatedAt: old });
  expect(await db('actions').findOne({ _id: 'act-new' })).toMatchObject({ summary: 'Refund' });
  expect((await redis.lrange(misses, 0, -1)).map((entry) => (JSON.parse(entry) as { question: string }).question)).toEqual(['new question']);
  expect((await redis.xrange(dead, '-', '+')).map(([, fields]) => fields[1])).toEqual(['new']);
});
