/**
 * The reports' days are the shop's local days (REPORTS_TIME_ZONE): on real FerretDB and Redis,
 * through the real transcript writer, a customer's message at 23:30 UTC counts on the next day in
 * Europe/Madrid (UTC+1 in winter), and a rebuild from MongoDB puts it on the same day.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { loadConfig } from '../../src/config.js';
import { createReportsFeature, type ReportsFeature } from '../../src/reports/index.js';
import { ROLLUP_COLLECTION } from '../../src/reports/rollup-store.js';
import type { TranscriptRecord } from '../../src/store/outbox.js';
import { createTranscriptWriter } from '../../src/store/transcript-writer.js';
import { startHarness, type Harness } from '../support/harness.js';

const CONVERSATION = 'whatsapp:+34600900123';
const message = (id: string, direction: 'inbound' | 'outbound', createdAt: string): TranscriptRecord => ({
  kind: 'message',
  message: {
    _id: id,
    conversationId: CONVERSATION,
    channel: 'whatsapp',
    direction,
    text: `text of ${id}`,
    status: direction === 'inbound' ? 'received' : 'pending',
    ...(direction === 'outbound' ? { roleId: 'sales' } : {}),
    createdAt,
    updatedAt: createdAt,
  },
});

let harness: Harness;
let reports: ReportsFeature;

const documents = async () =>
  (await harness.services.mongo.collection(ROLLUP_COLLECTION).find({}).toArray())
    .map(({ _id, counts }) => ({ _id, counts }))
    .sort((a, b) => String(a._id).localeCompare(String(b._id)));

beforeAll(async () => {
  harness = await startHarness({ worker: false });
  const { mongo, redis, logger, metrics, outbox } = harness.services;
  reports = createReportsFeature({
    connection: mongo,
    redis,
    logger,
    metrics,
    config: { adminToken: undefined, publicBaseUrl: 'http://127.0.0.1', channels: ['whatsapp'], prices: undefined },
    timeZone: 'Europe/Madrid',
  });
  const writer = createTranscriptWriter({ connection: mongo, outbox, batchSize: 10, logger, metrics, rollup: reports.recordTranscripts });
  await writer.apply([
    message('in:whatsapp:TZ1', 'inbound', '2026-11-02T23:30:00.000Z'),
    message('out:whatsapp:TZ1#0', 'outbound', '2026-11-02T23:30:02.000Z'),
  ]);
  await reports.store.flush();
}, 60_000);

afterAll(async () => {
  await reports?.close();
  await harness?.close();
});

describe('REPORTS_TIME_ZONE', () => {
  test('a message at 23:30 UTC counts on the next local day in Europe/Madrid, live and rebuilt', async () => {
    const live = await documents();
    expect(live).toEqual([
      { _id: '2026-11-03|whatsapp', counts: { in: 1, out: 1, conv: 1 } },
      // The role that replied: its view, on the same day.
      { _id: '2026-11-03|whatsapp~@sales', counts: { out: 1 } },
    ]);
    await reports.rebuild();
    expect(await documents()).toEqual(live);
  });

  test('the setting takes an IANA time zone, UTC by default, and refuses anything else by name', () => {
    const base = { NODE_ENV: 'test', OPENAI_API_KEY: 'key', WEB_SITES: '[]', PUBLIC_BASE_URL: 'https://shop.example', WIDGET_TOKEN_SECRET: 'x'.repeat(32) };
    expect(loadConfig(base).reports.timeZone).toBe('UTC');
    expect(loadConfig({ ...base, REPORTS_TIME_ZONE: 'Europe/Madrid' }).reports.timeZone).toBe('Europe/Madrid');
    expect(() => loadConfig({ ...base, REPORTS_TIME_ZONE: 'Mars/Olympus' })).toThrow(/REPORTS_TIME_ZONE/);
  });
});
