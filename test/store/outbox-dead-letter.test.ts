/**
 * The write path never wedges and never deletes what it did not write (issue 28): two writers
 * leave MongoDB's conversation name equal to Redis's whoever wrote what; a record MongoDB refuses
 * costs one dead-letter entry and a metric, and the records around it are written; an entry this
 * version cannot read is kept in the dead-letter stream, and a field it does not know is written,
 * not dropped; a writer leaves the outbox's consumer group when it stops, and consumers of
 * processes that ended without leaving are removed once nothing is pending for them.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import type { TranscriptRecord } from '../../src/store/outbox.js';
import { createTranscriptOutbox } from '../../src/store/outbox.js';
import { duplicateRedis } from '../../src/redis.js';
import { TRANSCRIPT_WRITER_GROUP, transcriptKeys } from '../../src/store/transcript-keys.js';
import type { TurnRecords } from '../../src/store/transcript-store.js';
import { createTranscriptWriter, type TranscriptWriter } from '../../src/store/transcript-writer.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';

let harness: Harness;
let database: string;
beforeAll(async () => {
  harness = await startHarness({ worker: false });
  database = harness.services.mongo.name;
});
afterAll(() => harness.close());

const writers: TranscriptWriter[] = [];
const newWriter = () => {
  const { mongo, outbox, logger, metrics } = harness.services;
  const writer = createTranscriptWriter({ connection: mongo, outbox, batchSize: 10, logger, metrics });
  writers.push(writer);
  return writer;
};
beforeEach(async () => {
  await Promise.all(writers.splice(0).map((writer) => writer.close()));
});

const at = (second: number) => new Date(Date.UTC(2026, 11, 1, 9, 0, second)).toISOString();
const message = (sid: string, extra: Record<string, unknown> = {}) => ({
  kind: 'message' as const,
  message: {
    _id: `in:whatsapp:${sid}`,
    conversationId: 'whatsapp:+447700909001',
    channel: 'whatsapp',
    direction: 'inbound' as const,
    text: `question ${sid}`,
    channelMessageId: sid,
    status: 'received' as const,
    createdAt: at(1),
    updatedAt: at(1),
    ...extra,
  },
});
const stored = (sid: string) => harness.services.transcripts.messages.collection.findOne({ _id: `in:whatsapp:${sid}` as never });
const outboxKey = () => transcriptKeys.outbox(database);
const deadLetters = async () =>
  (await harness.services.redis.xrange(transcriptKeys.deadLetters(database), '-', '+')).map(([, fields]) => {
    const entry: Record<string, string> = {};
    for (let index = 0; index < fields.length; index += 2) entry[fields[index]!] = fields[index + 1]!;
    return entry;
  });
const drained = () => eventually(async () => (await harness.services.redis.xlen(outboxKey())) === 0);

describe('two transcript writers', () => {
  test("MongoDB's conversation name ends as Redis's, whichever writer wrote which name", async () => {
    const { transcripts, redis } = harness.services;
    const key = 'whatsapp:+447700909100';
    const turn = async (displayName: string) => {
      const records: TranscriptRecord[] = [];
      const collector: TurnRecords = { add: (added) => void records.push(...added), flush: async () => undefined };
      await transcripts.openConversation({ key, channel: 'whatsapp', address: key, displayName }, collector);
      return records;
    };
    const [one, two] = [newWriter(), newWriter()];
    await one.apply(await turn('Ada'));
    await two.apply(await turn('Bea'));
    // The customer goes back to "Ada": writer one wrote "Ada" before, but writer two wrote since.
    await one.apply(await turn('Ada'));
    const inRedis = await redis.hget(transcriptKeys.conversation(key), 'displayName');
    expect(inRedis).toBe('Ada');
    expect((await transcripts.conversations.findById(key).lean())?.displayName).toBe(inRedis);
    // And a turn that changes nothing, on the other writer, leaves it so.
    await two.apply(await turn('Ada'));
    expect((await transcripts.conversations.findById(key).lean())?.displayName).toBe('Ada');
  });
});

describe('the dead-letter stream', () => {
  test('a record MongoDB refuses is set aside, logged and counted; the records around it are written and the writer goes on', async () => {
    const { outbox, metrics } = harness.services;
    const before = metrics.value('transcript_dead_letter_total', { reason: 'rejected' });
    // Over MongoDB's 16 MiB document limit: no attempt can ever store it.
    const oversized = message('SMdead2', { text: 'x'.repeat(16 * 1024 * 1024 + 1024) });
    await outbox.append([message('SMdead1')]);
    await outbox.append([message('SMdead3'), oversized, message('SMdead4')]);
    await outbox.append([message('SMdead5')]);
    newWriter().start();
    await drained();
    for (const sid of ['SMdead1', 'SMdead3', 'SMdead4', 'SMdead5']) expect(await stored(sid)).toMatchObject({ text: `question ${sid}` });
    expect(await stored('SMdead2')).toBeNull();
    expect(metrics.value('transcript_dead_letter_total', { reason: 'rejected' })).toBe(before + 1);
    const letters = await deadLetters();
    const letter = letters.find((entry) => entry.reason === 'rejected' && entry.r?.includes('SMdead2'));
    expect(letter).toBeDefined();
    // In the outbox's own format: the record is there whole, to be added back once fixed.
    expect(JSON.parse(letter!.r!)).toEqual([oversized]);
    expect(harness.logs).toContainEqual(expect.objectContaining({ level: 'error', event: 'transcript-records-dead-lettered', reason: 'rejected' }));
    // The writer is not wedged: what comes next is written.
    await outbox.append([message('SMdead6')]);
    await drained();
    expect(await stored('SMdead6')).not.toBeNull();
    // What /metrics renders.
    expect(await metrics.render()).toMatch(/^transcript_dead_letter_total\{reason="rejected"\} [1-9]/m);
  });

  test("a field this version does not know is written, not dropped; a record it cannot read is kept, and its entry's others written", async () => {
    const { outbox, metrics, redis } = harness.services;
    const before = metrics.value('transcript_dead_letter_total', { reason: 'unreadable' });
    const fromNewerVersion = { kind: 'reaction', _id: 'in:whatsapp:SMnew1', emoji: '👍', at: at(3) };
    await outbox.append([message('SMnew1', { language: 'es' })]);
    await redis.xadd(outboxKey(), '*', 'r', JSON.stringify([message('SMnew2'), fromNewerVersion, message('SMnew3')]));
    await redis.xadd(outboxKey(), '*', 'r', '{not json');
    newWriter().start();
    await drained();
    expect(await stored('SMnew1')).toMatchObject({ text: 'question SMnew1', language: 'es' });
    expect(await stored('SMnew2')).not.toBeNull();
    expect(await stored('SMnew3')).not.toBeNull();
    const letters = (await deadLetters()).filter((entry) => entry.reason === 'unreadable');
    expect(letters.map((entry) => (entry.r ? JSON.parse(entry.r) : JSON.parse(entry.raw!)))).toEqual(
      expect.arrayContaining([[fromNewerVersion], ['r', '{not json']]),
    );
    expect(metrics.value('transcript_dead_letter_total', { reason: 'unreadable' })).toBe(before + 2);
  });
});

describe('the dead-letter stream is bounded', () => {
  test('past its cap the oldest dead letters are trimmed (XADD MAXLEN ~): a flood of refused records cannot fill Redis', async () => {
    const { redis, logger, metrics } = harness.services;
    const capped = createTranscriptOutbox({ redis, database: `${database}-capped`, maxBacklog: 1_000, logger, metrics, deadLetterMaxLen: 50 });
    const letters = Array.from({ length: 300 }, (_, index) => ({ entryId: `1-${index}`, reason: 'rejected' as const, error: 'refused', records: [{ index }] }));
    await capped.deadLetter(letters);
    const kept = await redis.xlen(transcriptKeys.deadLetters(`${database}-capped`));
    // Approximate trimming removes whole stream nodes: at least the cap is kept, never the whole flood.
    expect(kept).toBeGreaterThanOrEqual(50);
    expect(kept).toBeLessThan(200);
    // The newest are the ones kept.
    const [newest] = await redis.xrevrange(transcriptKeys.deadLetters(`${database}-capped`), '+', '-', 'COUNT', 1);
    expect(newest?.[1]).toContain('1-299');
  });
});

describe("the outbox's consumers", () => {
  const consumers = async () => {
    const reply = (await harness.services.redis.xinfo('CONSUMERS', outboxKey(), TRANSCRIPT_WRITER_GROUP)) as unknown[][];
    return reply.map((fields) => ({ name: String(fields[fields.indexOf('name') + 1]), pending: Number(fields[fields.indexOf('pending') + 1]) }));
  };

  test('a writer that stops leaves the group', async () => {
    const { redis, logger, metrics, mongo, outbox: appender } = harness.services;
    const outbox = createTranscriptOutbox({ redis, maxBacklog: 1000, database, logger, metrics });
    const writer = createTranscriptWriter({ connection: mongo, outbox, batchSize: 10, logger, metrics });
    const before = (await consumers()).length;
    writer.start();
    // A consumer is in the group once it was given an entry.
    await appender.append([message('SMleave1')]);
    await eventually(async () => (await consumers()).length === before + 1 && (await stored('SMleave1')) !== null);
    await writer.close();
    expect(await consumers()).toHaveLength(before);
    expect(harness.logs).toContainEqual(expect.objectContaining({ event: 'transcript-outbox-consumer-left' }));
  });

  test("a read waiting for entries is ended by interrupt (a stopping writer does not wait out the read's block)", async () => {
    const { redis, logger, metrics } = harness.services;
    const reader = duplicateRedis(redis);
    try {
      const outbox = createTranscriptOutbox({ redis, reader, maxBacklog: 1000, database, logger, metrics });
      await outbox.ensureGroup();
      await drained();
      // A first read learns the reader's connection; the second blocks far longer than the test may run.
      await outbox.read(10, 1);
      const waiting = outbox.read(10, 600_000);
      await eventually(async () => String(await redis.client('LIST')).includes('cmd=xreadgroup') || undefined);
      await outbox.interrupt();
      expect(await waiting).toEqual([]);
    } finally {
      reader.disconnect();
    }
  });

  // One server's users (a cluster's nodes each have their own).
  (process.env.TEST_REDIS_CLUSTER_NODES ? test.skip : test)(
    'a reader Redis refuses CLIENT to (an ACL) still reads: only the interruption is lost',
    async () => {
      const { redis, logger, metrics, outbox: appender } = harness.services;
      const user = `outbox-no-client-${Date.now()}`;
      await redis.acl('SETUSER', user, 'on', '>not-a-secret', '~*', '&*', '+@all', '-client');
      // The harness's own database, as another user.
      const url = new URL(harness.env.REDIS_URL ?? '');
      url.username = user;
      url.password = 'not-a-secret';
      const reader = new Redis(url.toString(), { maxRetriesPerRequest: null });
      try {
        const outbox = createTranscriptOutbox({ redis, reader, maxBacklog: 1000, database, logger, metrics });
        await outbox.ensureGroup();
        await drained();
        await appender.append([message('SMacl1')]);
        const read = await outbox.read(10, 1000);
        expect(read.flatMap((entry) => entry.records.map((record) => (record.kind === 'message' ? record.message._id : '')))).toContain('in:whatsapp:SMacl1');
        await outbox.interrupt();
        await outbox.remove(read.map((entry) => entry.id));
        await outbox.leave();
      } finally {
        reader.disconnect();
        await redis.acl('DELUSER', user);
      }
    },
  );

  test('consumers of processes that ended without leaving are removed once nothing is pending for them; one with pending entries is kept', async () => {
    const { redis, logger, metrics, outbox: live } = harness.services;
    await live.ensureGroup();
    const ended = createTranscriptOutbox({ redis, maxBacklog: 1000, database, logger, metrics });
    const crashed = createTranscriptOutbox({ redis, maxBacklog: 1000, database, logger, metrics });
    await live.append([message('SMgone1')]);
    const done = await ended.read(10, 1);
    await ended.remove(done.map((entry) => entry.id));
    await live.append([message('SMpending1')]);
    const held = await crashed.read(10, 1);
    expect(held).toHaveLength(1);
    expect((await consumers()).map((consumer) => consumer.pending).sort()).toEqual([0, 1]);
    expect(await live.removeIdleConsumers(0)).toBe(1);
    // The one holding an entry stays (removing it would leave the entry in no one's pending list).
    expect(await consumers()).toEqual([{ name: expect.any(String), pending: 1 }]);
    await crashed.remove(held.map((entry) => entry.id));
    expect(await live.removeIdleConsumers(0)).toBe(1);
    expect(await consumers()).toEqual([]);
  });
});
