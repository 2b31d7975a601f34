/**
 * The `csat` collection on the run's MongoDB-wire server (FerretDB): a customer who taps a rating
 * at once, while the question's own record is still being written (a loaded MongoDB), races it
 * for the new `_id` — the rating must be what the owner's report reads, not lost to a duplicate key.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import mongoose, { type Connection } from 'mongoose';
import { createCsatStore, csatRecordId, type CsatRecord } from '../../src/csat/csat-store.js';
import type { PendingQuestion } from '../../src/csat/csat-state.js';

let connection: Connection;
beforeAll(async () => {
  const uri = process.env.TEST_MONGODB_URI;
  if (!uri) throw new Error('global-setup did not publish TEST_MONGODB_URI');
  connection = await mongoose.createConnection(uri, { dbName: `csat_store_${process.pid}` }).asPromise();
});
afterAll(async () => {
  await connection.dropDatabase();
  await connection.close();
});

test('a rating written while its question’s record is still being written is kept, every time', async () => {
  const store = createCsatStore(connection);
  const askedAt = Date.now();
  const questions = Array.from({ length: 10 }, (_, index): PendingQuestion => {
    const conversationKey = `whatsapp:+4477009160${String(index).padStart(2, '0')}`;
    return {
      id: csatRecordId(conversationKey, askedAt),
      stage: 'score',
      until: askedAt + 60_000,
      language: 'en',
      askedAt,
      channel: 'whatsapp',
      roleId: 'support',
      withPerson: false,
      trigger: 'quiet',
    };
  });
  await Promise.all(
    questions.map((question) => {
      const conversationKey = question.id.split('|')[0]!;
      const rated: PendingQuestion = { ...question, score: 4, answeredVia: 'tap', answeredAt: askedAt + 1 };
      return Promise.all([store.asked(conversationKey, question), store.answered(conversationKey, rated)]);
    }),
  );
  const stored = await connection
    .collection<CsatRecord>('csat')
    .find({ _id: { $in: questions.map((question) => question.id) } })
    .toArray();
  expect(stored.map((record) => [record._id, record.score, record.answeredVia]).sort()).toEqual(questions.map((question) => [question.id, 4, 'tap']).sort());
});
