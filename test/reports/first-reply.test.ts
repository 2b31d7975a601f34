/**
 * The team's first reply after a hand-off, on real FerretDB and Redis through the real transcript
 * writer: only a teammate's message the channel took (its delivery record) ends the wait — one
 * refused ("Not delivered": outside WhatsApp's 24 hours with no template) does not; the wait is
 * the current hand-off's — a hand-off that ended unanswered leaves nothing behind for the next;
 * a message written before its hand-off ended counts though its records arrive after the end;
 * the same replies per team and per teammate; each ended hand-off's resolution time; `rebuild`
 * from MongoDB gives the very same figures.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { createReportsFeature, type ReportsFeature } from '../../src/reports/index.js';
import { addDays } from '../../src/reports/rollup-events.js';
import { ROLLUP_COLLECTION } from '../../src/reports/rollup-store.js';
import { parseQuery, readSummary, withSatisfaction } from '../../src/reports/summary.js';
import { reportTables, toCsv } from '../../src/reports/tables.js';
import type { TranscriptRecord } from '../../src/store/outbox.js';
import { createTranscriptWriter, type TranscriptWriter } from '../../src/store/transcript-writer.js';
import { startHarness, type Harness } from '../support/harness.js';

// Days Redis still takes records for (a flush between two records of one day adds them up).
const DAY3 = new Date().toISOString().slice(0, 10);
const DAY1 = addDays(DAY3, -2);
const at = (day: string, minute: number) => new Date(Date.parse(`${day}T09:00:00Z`) + minute * 60_000);

const WEEKDAY = ['09:00-18:00'];
const SALES_HOURS = { timeZone: 'Europe/London', weekly: { mon: WEEKDAY, tue: WEEKDAY, wed: WEEKDAY, thu: WEEKDAY, fri: WEEKDAY }, closed: [] };

let harness: Harness;
let reports: ReportsFeature;
let writer: TranscriptWriter;

/** A teammate's message: written, then taken by WhatsApp (a delivery id) or refused outside the window. */
function teammateMessage(id: string, conversationId: string, written: Date, outcome: 'sent' | 'refused', teammate = 'Ana'): TranscriptRecord[] {
  const iso = written.toISOString();
  const message: TranscriptRecord = {
    kind: 'message',
    message: {
      _id: id,
      conversationId,
      channel: 'whatsapp',
      direction: 'outbound',
      text: 'on it',
      status: 'pending',
      roleId: `teammate:${teammate}`,
      createdAt: iso,
      updatedAt: iso,
    },
  };
  if (outcome === 'refused') {
    return [
      message,
      { kind: 'status', _id: id, status: 'failed', errorMessage: 'outside the 24-hour window and no approved reply template (replyContentSid)', at: iso },
    ];
  }
  return [
    message,
    { kind: 'status', _id: id, status: 'sent', channelMessageId: `SM${id}`, at: iso },
    { kind: 'delivery', _id: `SM${id}`, messageId: id, at: iso },
  ];
}

/** Opens (and, with `ended`, ends) a hand-off through the counted store, as the hand-off feature does; kept in MongoDB for the rebuild. */
async function handoff(id: string, conversationId: string, opened: Date, ended?: Date, team = 'support') {
  const record = { _id: id, conversationId, channel: 'whatsapp', team, roleId: 'support', status: 'open', createdAt: opened };
  await harness.services.mongo.collection('handoffs').insertOne(record as never);
  const store = reports.recordHandoffs({
    open: async () => ({ handoff: record, created: true }),
    close: async () => ({ ...record, status: 'closed', endedAt: ended }),
  });
  await store.open();
  if (ended) {
    await harness.services.mongo.collection('handoffs').updateOne({ _id: id as never }, { $set: { status: 'closed', endedAt: ended } });
    await store.close();
  }
}

/** The first-reply histograms of each day: elapsed (`frt`), or within the team's hours (`frth`); per team and teammate (`frt_team`, `frt_tm`, …). */
const firstReplies = async (kind: 'frt' | 'frth' | 'frt_team' | 'frth_team' | 'frt_tm' | 'frth_tm' | 'res' = 'frt') => {
  await reports.store.flush();
  const documents = await harness.services.mongo.collection(ROLLUP_COLLECTION).find({}).toArray();
  const replies: Record<string, Record<string, number>> = {};
  // The channels' documents (not a site's or a role's view of them).
  for (const document of documents.filter(({ _id }) => !String(_id).includes('~'))) {
    const counts = Object.fromEntries(
      Object.entries(document.counts as Record<string, number>).filter(([metric]) => metric.startsWith(`${kind}:`) || metric === `${kind}_n`),
    );
    if (Object.keys(counts).length > 0) replies[String(document._id)] = counts;
  }
  return replies;
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
    // Sales works weekdays 09:00–18:00 in London; support has no hours (always open).
    teamHours: (team) => (team === 'sales' ? SALES_HOURS : undefined),
  });
  writer = createTranscriptWriter({ connection: mongo, outbox, batchSize: 10, logger, metrics, rollup: reports.recordTranscripts });
}, 60_000);

afterAll(async () => {
  await reports?.close();
  await harness?.close();
});

describe("the team's first reply", () => {
  test('a message the channel refused is no reply; the first one that reached the customer is', async () => {
    const E = 'whatsapp:+447700900301';
    await handoff('ho_first_e', E, at(DAY1, 0));
    // 1 minute after the hand-off: refused outside the 24-hour window ("Not delivered").
    await writer.apply(teammateMessage('out:tm:E1', E, at(DAY1, 1), 'refused'));
    // 20 minutes after: taken by WhatsApp.
    await writer.apply(teammateMessage('out:tm:E2', E, at(DAY1, 20), 'sent'));
    // The wait is 20 minutes: within 30 (bucket 3), not within a minute (bucket 0).
    expect((await firstReplies())[`${DAY1}|whatsapp`]).toEqual({ 'frt:3': 1, frt_n: 1 });
  });

  test('a conversation handed off again is measured from the current hand-off, not an earlier one that ended unanswered', async () => {
    const F = 'whatsapp:+447700900302';
    await handoff('ho_first_f1', F, at(DAY1, 0), at(DAY1, 60));
    await handoff('ho_first_f2', F, at(DAY3, 0));
    await writer.apply(teammateMessage('out:tm:F1', F, at(DAY3, 3), 'sent'));
    const replies = await firstReplies();
    // Three minutes on the second hand-off's day (bucket 1); nothing two days long on the first's.
    expect(replies[`${DAY3}|whatsapp`]).toEqual({ 'frt:1': 1, frt_n: 1 });
    expect(replies[`${DAY1}|whatsapp`]).toEqual({ 'frt:3': 1, frt_n: 1 });
  });

  test('a reply written before its hand-off ended counts though the transcript writer brings it after the end', async () => {
    const G = 'whatsapp:+447700900303';
    await handoff('ho_first_g', G, at(DAY3, 100), at(DAY3, 110));
    await writer.apply(teammateMessage('out:tm:G1', G, at(DAY3, 105), 'sent'));
    // And one written after its hand-off ended answers nothing.
    const H = 'whatsapp:+447700900304';
    await handoff('ho_first_h', H, at(DAY3, 200), at(DAY3, 210));
    await writer.apply(teammateMessage('out:tm:H1', H, at(DAY3, 215), 'sent'));
    // F's and G's replies; none for H.
    expect((await firstReplies())[`${DAY3}|whatsapp`]).toEqual({ 'frt:1': 2, frt_n: 2 });
  });

  test("a wait is also counted within the team's hours: 40 s after Monday's opening, not the weekend", async () => {
    const K = 'whatsapp:+447700900305';
    // Handed to sales on Saturday 7 November 2026 at 10:00 (London is on GMT), answered Monday at 09:00:40.
    await handoff('ho_first_k', K, new Date('2026-11-07T10:00:00Z'), undefined, 'sales');
    await writer.apply(teammateMessage('out:tm:K1', K, new Date('2026-11-09T09:00:40Z'), 'sent'));
    // Elapsed: 47 hours (within 48 h, bucket 9); within the team's hours: 40 s (bucket 0).
    expect((await firstReplies('frt'))['2026-11-07|whatsapp']).toEqual({ 'frt:9': 1, frt_n: 1 });
    expect((await firstReplies('frth'))['2026-11-07|whatsapp']).toEqual({ 'frth:0': 1, frth_n: 1 });
  });

  test("first replies by the hand-off's team and by the teammate who wrote the reply, elapsed and within team hours", async () => {
    const L = 'whatsapp:+447700900306';
    await handoff('ho_first_l', L, at(DAY3, 300));
    await writer.apply(teammateMessage('out:tm:L1', L, at(DAY3, 302), 'sent', 'Bo Lind'));
    await reports.store.flush();
    const query = parseQuery({ from: '2026-11-01', to: DAY3 }, ['whatsapp'], DAY3);
    if ('error' in query) throw new Error(query.error);
    const { totals } = await readSummary(reports.store, query.query, ['whatsapp'], DAY3);
    // Support: E (20 min), F (3 min), G (5 min) by Ana, L (2 min) by Bo; sales: K (47 h, 40 s within its hours) by Ana.
    expect(totals.firstReplyByTeam).toEqual({
      sales: { replies: 1, medianSeconds: 129_600, p90Seconds: 164_160, withinHours: { medianSeconds: 30, p90Seconds: 54 } },
      support: { replies: 4, medianSeconds: 220, p90Seconds: 1440, withinHours: { medianSeconds: 220, p90Seconds: 1440 } },
    });
    expect(totals.firstReplyByTeammate).toEqual({
      Ana: { replies: 4, medianSeconds: 300, p90Seconds: 138_240, withinHours: { medianSeconds: 180, p90Seconds: 1440 } },
      'Bo Lind': { replies: 1, medianSeconds: 180, p90Seconds: 276, withinHours: { medianSeconds: 180, p90Seconds: 276 } },
    });
    // The CSV has the same rows.
    const csv = toCsv(reportTables(withSatisfaction(await readSummary(reports.store, query.query, ['whatsapp'], DAY3), null))['first-reply-by']).split('\r\n');
    expect(csv.slice(0, 3)).toEqual([
      'by,name,replies,median,p90,median within team hours,p90 within team hours',
      'team,sales,1,36.0 h,45.6 h,30 s,54 s',
      'team,support,4,4 min,24 min,4 min,24 min',
    ]);
    expect(csv[4]).toBe('teammate,Bo Lind,1,3 min,5 min,3 min,5 min');
  });

  test("resolution time: each ended hand-off's time from opening to its end, on the day it opened", async () => {
    // F1 ended after 60 minutes (on DAY1), G and H after 10 (on DAY3); the others have not ended.
    expect(Object.fromEntries(Object.entries(await firstReplies('res')).map(([day, counts]) => [day, counts]))).toEqual({
      [`${DAY1}|whatsapp`]: { 'res:4': 1 },
      [`${DAY3}|whatsapp`]: { 'res:2': 2 },
    });
    const query = parseQuery({ from: '2026-11-01', to: DAY3 }, ['whatsapp'], DAY3);
    if ('error' in query) throw new Error(query.error);
    const { totals } = await readSummary(reports.store, query.query, ['whatsapp'], DAY3);
    // Read from the steps like the first reply: 10 minutes twice (within 15) and an hour.
    expect(totals.resolution).toEqual({ ended: 3, medianSeconds: 750, p90Seconds: 3060 });
  });

  test('a rebuild from MongoDB gives the same first replies and resolution times', async () => {
    const kinds = ['frt', 'frth', 'frt_team', 'frth_team', 'frt_tm', 'frth_tm', 'res'] as const;
    const live = await Promise.all(kinds.map((kind) => firstReplies(kind)));
    expect(Object.keys(live[4] ?? {})).not.toHaveLength(0);
    await reports.rebuild();
    expect(await Promise.all(kinds.map((kind) => firstReplies(kind)))).toEqual(live);
  });
});
