/**
 * Weekly and monthly grouping over seeded roll-ups on real FerretDB: `group=week` sums Monday to
 * Sunday (a week cut by the range holds only its days in it, and says which), `group=month` by
 * calendar month; a period is settled only when all its days are; the CSV has the same rows; the
 * page's charts draw one bar per period, those not yet settled marked; an unknown grouping is a
 * 400 with its reason.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import express from 'express';
import request from 'supertest';
import { createReportsFeature, type ReportsFeature } from '../../src/reports/index.js';
import { startHarness, type Harness } from '../support/harness.js';

const TOKEN = 'reports-grouping-token-0123456789abcdef';
// A Monday: the 28th is the last settled day.
const TODAY = '2026-11-30';

let harness: Harness;
let reports: ReportsFeature;
let http: ReturnType<typeof request>;
const bearer = { Authorization: `Bearer ${TOKEN}` };

beforeAll(async () => {
  harness = await startHarness({ worker: false });
  const { mongo, redis, logger, metrics } = harness.services;
  reports = createReportsFeature({
    connection: mongo,
    redis,
    logger,
    metrics,
    config: { adminToken: TOKEN, publicBaseUrl: 'http://127.0.0.1', channels: ['whatsapp', 'web'], prices: undefined },
    today: () => TODAY,
  });
  // November: WhatsApp has as many conversations as the day of the month, the web 5 a day.
  const documents = Array.from({ length: 30 }, (_, index) => {
    const day = `2026-11-${String(index + 1).padStart(2, '0')}`;
    return [
      { _id: `${day}|whatsapp`, counts: { conv: index + 1, in: 2 * (index + 1), out: 3 * (index + 1), unres: 1 } },
      { _id: `${day}|web`, counts: { conv: 5, in: 5, out: 5 } },
    ];
  }).flat();
  await mongo.collection('report_rollups').insertMany(documents as never[]);
  const app = express();
  app.use(reports.router);
  http = request(app);
}, 60_000);

afterAll(async () => {
  await reports?.close();
  await harness?.close();
});

describe('grouping', () => {
  test('by week: Monday to Sunday, the range cutting the first and last; settled only when every day is', async () => {
    const response = await http.get('/admin/reports/summary?from=2026-11-01&to=2026-11-30&group=week').set(bearer);
    expect(response.status).toBe(200);
    expect(response.body.group).toBe('week');
    expect(response.body.days).toHaveLength(30);
    const periods = response.body.periods as { day: string; from: string; to: string; conversations: number; settled: boolean }[];
    expect(periods.map(({ day, from, to, conversations, settled }) => [day, from, to, conversations, settled])).toEqual([
      ['2026-10-26', '2026-11-01', '2026-11-01', 6, true],
      ['2026-11-02', '2026-11-02', '2026-11-08', 70, true],
      ['2026-11-09', '2026-11-09', '2026-11-15', 119, true],
      ['2026-11-16', '2026-11-16', '2026-11-22', 168, true],
      ['2026-11-23', '2026-11-23', '2026-11-29', 217, false],
      ['2026-11-30', '2026-11-30', '2026-11-30', 35, false],
    ]);
    // The totals do not depend on the grouping.
    expect(response.body.totals.conversations).toBe(615);
  });

  test('by month, as CSV too; an unknown grouping is a 400', async () => {
    const json = await http.get('/admin/reports/summary?from=2026-10-20&to=2026-11-30&group=month').set(bearer);
    expect((json.body.periods as { day: string; conversations: number; resolvedWithoutPerson: number }[]).map((one) => [one.day, one.conversations])).toEqual([
      ['2026-10', 0],
      ['2026-11', 615],
    ]);
    const csv = await http.get('/admin/reports/csv/daily.csv?from=2026-10-20&to=2026-11-30&group=month').set(bearer);
    expect(csv.status).toBe(200);
    expect(csv.text.split('\r\n').slice(0, 3)).toEqual([
      'month,conversations,distinct conversations,messages in,messages out,hand-offs,resolved without a person,resolved by the assistant,settled,actions run,actions declined,actions failed,knowledge misses,model calls,model cost,of which rating messages',
      // Seeded roll-ups without the distinct conversations' counts (as before a rebuild): none.
      '2026-10,0,0,0,0,0,0,0,yes,0,0,0,0,0,,0',
      '2026-11,615,0,1080,1545,0,585,0,not yet,0,0,0,0,0,,0',
    ]);
    const bad = await http.get('/admin/reports/summary?group=year').set(bearer);
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: 'group must be one of day, week, month' });
    expect(harness.logs.some((line) => line.event === 'reports-request-rejected' && line.reason === 'group must be one of day, week, month')).toBe(true);
  });

  test('the page: one bar per week, the weeks not yet settled marked as such, the grouping kept in its links', async () => {
    const signIn = await http.post('/admin/reports/sign-in').type('form').send({ token: TOKEN, group: 'week', preset: 'last-30-days' });
    expect(signIn.headers.location).toBe('/admin/reports?preset=last-30-days&group=week');
    const cookie = String(signIn.headers['set-cookie'] ?? '').split(';')[0] ?? '';
    const page = await http.get('/admin/reports?preset=last-30-days&group=week').set('Cookie', cookie);
    expect(page.status).toBe(200);
    const chart = /<svg[^>]*aria-labelledby="c-conv-t c-conv-d"[^]*?<\/svg>/.exec(page.text)?.[0] ?? '';
    expect(chart.match(/<rect /g)).toHaveLength(6);
    expect(chart.match(/<rect class="s1 unsettled"/g)).toHaveLength(2);
    expect(chart).toContain('<title>week of 2026-11-23 · conversations: 217 (not yet settled)</title>');
    expect(chart).toContain('<desc id="c-conv-d">conversations: 615 in all; not yet settled: week of 2026-11-23, week of 2026-11-30</desc>');
    expect(page.text).toContain('<option value="week" selected>Week</option>');
    expect(page.text).toContain('href="/admin/reports/csv/daily.csv?from=2026-11-01&to=2026-11-30&channel=all&group=week"');
    expect(page.text).toContain('<h2 id="t-daily">Per week</h2>');
  });
});
