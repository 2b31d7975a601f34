/**
 * Distinct conversations and the share the assistant resolved, on real FerretDB and Redis through
 * the real transcript writer and hand-off hook: a conversation writing on three days is one
 * conversation over the range (three conversation-days), per week each week's own; one with a
 * hand-off or a teammate's message is not resolved by the assistant; a rebuild after Redis lost
 * the counts gives the same figures; a range older than they are kept has none.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { ReportsFeature } from '../../src/reports/index.js';
import { startHarness, type Harness } from '../support/harness.js';
import { reportsOn, type ReportRig, transcriptMessage } from './report-rig.js';

const TOKEN = 'reports-distinct-token-0123456789abcdef';
// A Monday, the Tuesday after, and the next Monday.
const MON = '2026-11-02';
const TUE = '2026-11-03';
const NEXT_MON = '2026-11-09';
const at = (day: string, minute: number) => new Date(Date.parse(`${day}T09:00:00Z`) + minute * 60_000).toISOString();

const A = 'whatsapp:+447700900601';
const B = 'whatsapp:+447700900602';
const C = 'web:harbour:visitor-c:chat-1';
const D = 'web:harbour:visitor-d:chat-1';

const message = transcriptMessage;

const handoff = {
  _id: 'ho_distinct_b',
  conversationId: B,
  channel: 'whatsapp',
  team: 'support',
  roleId: 'support',
  status: 'open',
  createdAt: new Date(at(MON, 5)),
};

let harness: Harness;
let reports: ReportsFeature;
let http: ReportRig['http'];

beforeAll(async () => {
  harness = await startHarness({ worker: false });
  const { mongo } = harness.services;
  const rig = reportsOn(harness, TOKEN);
  ({ reports, http } = rig);
  const { writer } = rig;
  await writer.apply([
    message('in:whatsapp:DA1', A, 'inbound', at(MON, 0)),
    message('out:whatsapp:DA1#0', A, 'outbound', at(MON, 1), 'sales'),
    message('in:whatsapp:DB1', B, 'inbound', at(MON, 2)),
    message('in:whatsapp:DA2', A, 'inbound', at(TUE, 0)),
    message('in:web:DC1', C, 'inbound', at(TUE, 1)),
    // A teammate writes C without a hand-off: a person took part.
    message('out:web:DC1#0', C, 'outbound', at(TUE, 2), 'teammate:Ana'),
  ]);
  await mongo.collection('handoffs').insertOne(handoff as never);
  await reports.recordHandoffs({ open: async () => ({ handoff, created: true }) }).open();
  await writer.apply([message('in:whatsapp:DA3', A, 'inbound', at(NEXT_MON, 0)), message('in:web:DD1', D, 'inbound', at(NEXT_MON, 1))]);
}, 60_000);

afterAll(async () => {
  await reports?.close();
  await harness?.close();
});

const summary = async (query: string) => {
  const response = await http.get(`/admin/reports/summary?${query}`).set('Authorization', `Bearer ${TOKEN}`);
  expect(response.status).toBe(200);
  return response.body;
};

/** The figures the distinct conversations make, over the range, per period and for the previous period. */
const figures = (body: { totals: Record<string, unknown>; periods: Record<string, unknown>[]; previous: { totals: Record<string, unknown> } }) => ({
  totals: (({ conversations, distinctConversations, resolvedByAssistant, resolvedByAssistantRate }) => ({
    conversations,
    distinctConversations,
    resolvedByAssistant,
    resolvedByAssistantRate,
  }))(body.totals),
  periods: body.periods.map(({ day, conversations, distinctConversations, resolvedByAssistant }) => [
    day,
    conversations,
    distinctConversations,
    resolvedByAssistant,
  ]),
  previous: [body.previous.totals.distinctConversations, body.previous.totals.resolvedByAssistant],
});

const EXPECTED = {
  // Conversation-days: A three times, B, C and D once; four distinct, of which A and D had no person.
  totals: { conversations: 6, distinctConversations: 4, resolvedByAssistant: 2, resolvedByAssistantRate: 0.5 },
  periods: [
    [MON, 4, 3, 1],
    [NEXT_MON, 2, 2, 2],
  ],
  previous: [0, 0],
};

describe('distinct conversations', () => {
  test('over the range and per week: each conversation once, and the share without a person', async () => {
    expect(figures(await summary(`from=${MON}&to=${NEXT_MON}&group=week`))).toEqual(EXPECTED);
    const byDay = await summary(`from=${MON}&to=${TUE}`);
    expect(figures(byDay).periods).toEqual([
      [MON, 2, 2, 1],
      [TUE, 2, 2, 1],
    ]);
    const web = await summary(`from=${MON}&to=${NEXT_MON}&channel=web`);
    expect(figures(web).totals).toEqual({ conversations: 2, distinctConversations: 2, resolvedByAssistant: 1, resolvedByAssistantRate: 0.5 });
  });

  test('a rebuild after Redis lost them gives the same figures', async () => {
    const { redis } = harness.services;
    const logs = await redis.keys('*hll-*');
    expect(logs.length).toBeGreaterThan(0);
    await redis.del(...logs);
    expect(figures(await summary(`from=${MON}&to=${NEXT_MON}&group=week`)).totals.distinctConversations).toBe(0);
    await reports.rebuild();
    expect(figures(await summary(`from=${MON}&to=${NEXT_MON}&group=week`))).toEqual(EXPECTED);
  });

  test('a range older than they are kept has none, and says so', async () => {
    const old = await summary('from=2024-01-01&to=2024-01-31');
    expect(old.totals).toMatchObject({ distinctConversations: null, resolvedByAssistant: null, resolvedByAssistantRate: null });
  });
});
