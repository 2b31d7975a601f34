/**
 * Reports by role, on real FerretDB and Redis through the real transcript writer, the hand-off hook
 * and the usage hook: a role's figures are what it did — its replies, its hand-offs and their first
 * replies, its model use, the satisfaction answers after its turns (no figure per conversation); the summary, CSV and page take `role`; an unknown role, or a site and a role
 * together, is a 400 saying so; a rebuild from MongoDB gives the same documents.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { ReportsFeature } from '../../src/reports/index.js';
import { startHarness, type Harness } from '../support/harness.js';
import { reportsOn, type ReportRig, transcriptMessage, rated as ratedQuestion, rollupDocuments } from './report-rig.js';

const TOKEN = 'reports-role-token-0123456789abcdef';
const DAY = '2026-11-06';
const NEXT = new Date(Date.parse(`${DAY}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
const at = (minute: number) => new Date(Date.parse(`${DAY}T09:00:00Z`) + minute * 60_000).toISOString();
const A = 'whatsapp:+447700900901';
const B = 'whatsapp:+447700900902';
const C = 'web:harbour:visitor-9:chat-1';

const message = (id: string, conversationId: string, direction: 'inbound' | 'outbound', minute: number, roleId?: string) =>
  transcriptMessage(id, conversationId, direction, at(minute), roleId);
const handoff = { _id: 'ho_role_b', conversationId: B, channel: 'whatsapp', team: 'support', roleId: 'support', status: 'taken', createdAt: new Date(at(4)) };
const usage = [
  { day: DAY, roleId: 'sales', channelId: 'whatsapp', model: 'model-a', calls: 3, inputTokens: 900, outputTokens: 300 },
  { day: DAY, roleId: 'support', channelId: 'whatsapp', model: 'model-a', calls: 1, inputTokens: 100, outputTokens: 50 },
];

/** A satisfaction question asked in a conversation after a role's turn, rated (the next day: its messages leave the day's figures alone). */
const rated = (conversation: string, roleId: string, score: number, minute: number) => ratedQuestion(harness, conversation, roleId, score, at(minute));

let harness: Harness;
let reports: ReportsFeature;
let http: ReportRig['http'];
const bearer = { Authorization: `Bearer ${TOKEN}` };

const documents = () => rollupDocuments(harness);

beforeAll(async () => {
  harness = await startHarness({ worker: false });
  const { mongo } = harness.services;
  const rig = reportsOn(harness, TOKEN, { satisfaction: true });
  ({ reports, http } = rig);
  const { writer } = rig;
  await writer.apply([
    message('in:whatsapp:RA1', A, 'inbound', 0),
    message('out:whatsapp:RA1#0', A, 'outbound', 1, 'sales'),
    message('out:whatsapp:RA1#1', A, 'outbound', 1, 'sales'),
    message('in:whatsapp:RB1', B, 'inbound', 2),
    message('out:whatsapp:RB1#0', B, 'outbound', 3, 'support'),
    message('in:web:RC1', C, 'inbound', 2),
    message('out:web:RC1#0', C, 'outbound', 3, 'sales'),
  ]);
  await mongo.collection('handoffs').insertOne(handoff as never);
  await reports.recordHandoffs({ open: async () => ({ handoff, created: true }) }).open();
  await writer.apply([
    message('out:whatsapp:RB2#0', B, 'outbound', 9, 'teammate:Ana'),
    { kind: 'status', _id: 'out:whatsapp:RB2#0', status: 'sent', channelMessageId: 'SM-RB2', at: at(9) },
    { kind: 'delivery', _id: 'SM-RB2', messageId: 'out:whatsapp:RB2#0', at: at(9) },
  ]);
  // Model use as the usage store keeps it (per role) and as its fold tells the reports.
  for (const one of usage) {
    await mongo.collection('model_usage').insertOne({
      _id: `${one.day}|${one.roleId}|${one.channelId}|${one.model}` as never,
      calls: one.calls,
      inputTokens: one.inputTokens,
      outputTokens: one.outputTokens,
    });
  }
  await reports.recordUsage(usage);
  await rated(A, 'sales', 5, 24 * 60 + 20);
  await rated(B, 'support', 2, 24 * 60 + 21);
  await reports.store.flush();
}, 60_000);

afterAll(async () => {
  await reports?.close();
  await harness?.close();
});

const figures = async (query: string) => {
  const response = await http.get(`/admin/reports/summary?from=${DAY}&to=${DAY}&${query}`).set(bearer);
  expect(response.status).toBe(200);
  const { totals } = response.body;
  return {
    conversations: totals.conversations,
    distinct: totals.distinctConversations,
    resolvedByAssistant: totals.resolvedByAssistant,
    messages: [totals.messagesIn, totals.messagesOut],
    handoffs: totals.handoffs,
    firstReplies: totals.teammateFirstResponse.replies,
    modelCalls: totals.model.calls,
  };
};

describe('by role', () => {
  test('a role’s figures are what it did; all roles keep everything', async () => {
    expect(await figures('role=sales')).toEqual({
      conversations: 0,
      distinct: null,
      resolvedByAssistant: null,
      messages: [0, 3],
      handoffs: 0,
      firstReplies: 0,
      modelCalls: 3,
    });
    expect(await figures('role=support')).toEqual({
      conversations: 0,
      distinct: null,
      resolvedByAssistant: null,
      messages: [0, 1],
      handoffs: 1,
      firstReplies: 1,
      modelCalls: 1,
    });
    expect(await figures('role=sales&channel=web')).toMatchObject({ messages: [0, 1], modelCalls: 0 });
    expect(await figures('')).toEqual({
      conversations: 3,
      distinct: 3,
      resolvedByAssistant: 2,
      messages: [3, 5],
      handoffs: 1,
      firstReplies: 1,
      modelCalls: 4,
    });
  });

  test('an unknown role, or a site and a role together, is a 400; the CSV and the page take the role', async () => {
    const unknown = await http.get('/admin/reports/summary?role=billing').set(bearer);
    expect(unknown.status).toBe(400);
    expect(unknown.body).toEqual({ error: 'role must be all or one of sales, support' });
    const both = await http.get('/admin/reports/summary?role=sales&site=harbour').set(bearer);
    expect(both.status).toBe(400);
    expect(both.body).toEqual({ error: 'choose a site or a role, not both' });
    const csv = await http.get(`/admin/reports/csv/daily.csv?from=${DAY}&to=${DAY}&role=support`).set(bearer);
    expect(csv.headers['content-disposition']).toBe(`attachment; filename="daily-all-support-${DAY}-${DAY}.csv"`);
    const signIn = await http.post('/admin/reports/sign-in').type('form').send({ token: TOKEN });
    const cookie = String(signIn.headers['set-cookie']).split(';')[0] ?? '';
    const page = await http.get(`/admin/reports?from=${DAY}&to=${DAY}&role=support`).set('Cookie', cookie);
    expect(page.text).toContain(
      '<label>Role<select name="role"><option value="all">All roles</option><option value="sales">sales</option><option value="support" selected>support</option></select></label>',
    );
    expect(page.text).toContain(' · role support (what it did:');
  });

  test('a rebuild from MongoDB gives the same documents, the roles’ included', async () => {
    const live = await documents();
    expect(live.map(({ _id }) => _id)).toEqual([
      `${DAY}|web`,
      `${DAY}|web~@sales`,
      `${DAY}|web~harbour`,
      `${DAY}|whatsapp`,
      `${DAY}|whatsapp~@sales`,
      `${DAY}|whatsapp~@support`,
    ]);
    await reports.rebuild();
    expect(await documents()).toEqual(live);
  });

  test('satisfaction is the chosen one\u2019s answers', async () => {
    const response = await http.get(`/admin/reports/summary?from=${DAY}&to=${NEXT}&role=support`).set(bearer);
    expect(response.body.csat).toMatchObject({ asked: 1, responses: 1, score: 2 });
    const all = await http.get(`/admin/reports/summary?from=${DAY}&to=${NEXT}`).set(bearer);
    expect(all.body.csat).toMatchObject({ asked: 2, responses: 2 });
  });
});
