/**
 * Counting under failure, on real FerretDB and Redis through the real transcript writer: Redis
 * losing the roll-up's totals (no AOF, a reset) loses nothing already flushed, and what is
 * counted after adds to the day instead of hiding under it; a record counted late for a day
 * Redis no longer keeps adds to it too; a retried flush adds nothing twice; a rebuild while a
 * writer counts a message of today counts it once.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { KEY_PREFIX } from '../../src/redis.js';
import { createReportsFeature, type ReportsFeature } from '../../src/reports/index.js';
import { ROLLUP_COLLECTION } from '../../src/reports/rollup-store.js';
import type { TranscriptRecord } from '../../src/store/outbox.js';
import { createTranscriptWriter, type TranscriptWriter } from '../../src/store/transcript-writer.js';
import { startHarness, type Harness } from '../support/harness.js';

const TODAY = new Date().toISOString().slice(0, 10);
const OLD_DAY = '2026-10-05';

let harness: Harness;
let reports: ReportsFeature;
let writer: TranscriptWriter;

const inbound = (id: string, conversationId: string, createdAt: string): TranscriptRecord => ({
  kind: 'message',
  message: { _id: id, conversationId, channel: 'whatsapp', direction: 'inbound', text: 'hello', status: 'received', createdAt, updatedAt: createdAt },
});

const counts = async (day: string) => {
  await reports.store.flush();
  const document = await harness.services.mongo.collection(ROLLUP_COLLECTION).findOne({ _id: `${day}|whatsapp` as never });
  return document?.counts as Record<string, number> | undefined;
};

beforeAll(async () => {
  harness = await startHarness({ worker: false });
  const { mongo, redis, logger, metrics, outbox } = harness.services;
  reports = createReportsFeature({
    connection: mongo,
    redis,
    logger,
    metrics,
    config: { adminToken: undefined, publicBaseUrl: 'http://127.0.0.1', channels: ['whatsapp'], prices: undefined },
  });
  writer = createTranscriptWriter({ connection: mongo, outbox, batchSize: 10, logger, metrics, rollup: reports.recordTranscripts });
}, 60_000);

afterAll(async () => {
  await reports?.close();
  await harness?.close();
});

describe('counting under failure', () => {
  test('Redis losing the totals loses nothing flushed; what comes after adds to the day', async () => {
    const at = `${TODAY}T00:00:01.000Z`;
    await writer.apply([
      inbound('in:fail:1', 'whatsapp:+447700900501', at),
      inbound('in:fail:2', 'whatsapp:+447700900501', at),
      inbound('in:fail:3', 'whatsapp:+447700900502', at),
    ]);
    expect(await counts(TODAY)).toMatchObject({ in: 3, conv: 2 });
    // Redis restarted without its data: every roll-up key is gone.
    const { redis } = harness.services;
    const keys = await redis.keys(`${KEY_PREFIX}:{reports:*`);
    if (keys.length > 0) await redis.del(...keys);
    await writer.apply([inbound('in:fail:4', 'whatsapp:+447700900503', at)]);
    expect(await counts(TODAY)).toMatchObject({ in: 4, conv: 3 });
  });

  test('a record counted late, for a day Redis no longer keeps, adds to that day', async () => {
    const at = `${OLD_DAY}T10:00:00.000Z`;
    await writer.apply([inbound('in:late:1', 'whatsapp:+447700900511', at), inbound('in:late:2', 'whatsapp:+447700900512', at)]);
    expect(await counts(OLD_DAY)).toMatchObject({ in: 2, conv: 2 });
    // The transcript writer comes back from a long backlog with one more message of that day.
    await writer.apply([inbound('in:late:3', 'whatsapp:+447700900513', at)]);
    expect(await counts(OLD_DAY)).toMatchObject({ in: 3, conv: 3 });
  });

  test('a flush that failed after writing is retried without adding twice', async () => {
    const at = `${TODAY}T00:00:02.000Z`;
    const before = (await counts(TODAY))?.in ?? 0;
    await writer.apply([inbound('in:retry:1', 'whatsapp:+447700900521', at)]);
    // The first attempt writes to MongoDB, then fails before it can forget what it wrote.
    const { redis } = harness.services;
    const realEval = redis.evalsha.bind(redis);
    let failed = false;
    const evalsha = redis.evalsha;
    redis.evalsha = (async (...args: Parameters<typeof realEval>) => {
      const [, , keyName] = args as unknown as [string, number, string];
      if (!failed && String(keyName).endsWith(':flushing')) {
        failed = true;
        throw new Error('connection lost');
      }
      return realEval(...args);
    }) as typeof redis.evalsha;
    try {
      await expect(reports.store.flush()).rejects.toThrow('connection lost');
    } finally {
      redis.evalsha = evalsha;
    }
    expect(failed).toBe(true);
    expect((await counts(TODAY))?.in).toBe(before + 1);
    expect((await counts(TODAY))?.in).toBe(before + 1);
  });

  test('a rebuild while a writer counts a message of today counts it once', async () => {
    const at = `${TODAY}T00:00:03.000Z`;
    await writer.apply([inbound('in:rebuild:1', 'whatsapp:+447700900531', at)]);
    const before = await counts(TODAY);
    // The writer stores and counts a message just after the rebuild emptied Redis's totals.
    const reset = reports.store.reset.bind(reports.store);
    let wrote = false;
    reports.store.reset = async (...args) => {
      await reset(...args);
      if (!wrote) {
        wrote = true;
        await writer.apply([inbound('in:rebuild:2', 'whatsapp:+447700900532', at)]);
      }
    };
    try {
      await reports.rebuild();
    } finally {
      reports.store.reset = reset;
    }
    expect(wrote).toBe(true);
    expect(await counts(TODAY)).toMatchObject({ in: (before?.in ?? 0) + 1, conv: (before?.conv ?? 0) + 1 });
  });
});
