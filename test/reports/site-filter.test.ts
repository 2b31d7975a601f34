/**
 * Reports by widget site, on real FerretDB and Redis through the real transcript writer and the
 * hand-off hook: each figure of a site's conversations (messages, conversations, distinct ones,
 * hand-offs, the teammate's first reply, actions) counts in its site's view as well as its
 * channel's; the summary, CSV and page take `site`; an unknown site is a 400 naming the sites; a
 * rebuild from MongoDB gives the same documents.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { ReportsFeature } from '../../src/reports/index.js';
import { startHarness, type Harness } from '../support/harness.js';
import { reportsOn, type ReportRig, transcriptMessage, rated as ratedQuestion, rollupDocuments } from './report-rig.js';

const TOKEN = 'reports-site-token-0123456789abcdef';
const DAY = '2026-11-05';
const NEXT = new Date(Date.parse(`${DAY}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
const at = (minute: number) => new Date(Date.parse(`${DAY}T09:00:00Z`) + minute * 60_000).toISOString();
const H1 = 'web:harbour:visitor-1:chat-1';
const H2 = 'web:harbour:visitor-2:chat-1';
const Q1 = 'web:quay:visitor-3:chat-1';
const W1 = 'whatsapp:+447700900801';

const message = (id: string, conversationId: string, direction: 'inbound' | 'outbound', minute: number, roleId?: string) =>
  transcriptMessage(id, conversationId, direction, at(minute), roleId);
const handoff = { _id: 'ho_site_h2', conversationId: H2, channel: 'web', team: 'support', roleId: 'support', status: 'taken', createdAt: new Date(at(3)) };

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
    message('in:web:SH1', H1, 'inbound', 0),
    message('out:web:SH1#0', H1, 'outbound', 1, 'sales'),
    message('in:web:SH2', H2, 'inbound', 2),
    message('in:web:SQ1', Q1, 'inbound', 2),
    message('out:web:SQ1#0', Q1, 'outbound', 3, 'sales'),
    message('in:whatsapp:SW1', W1, 'inbound', 4),
  ]);
  await mongo.collection('handoffs').insertOne(handoff as never);
  await reports.recordHandoffs({ open: async () => ({ handoff, created: true }) }).open();
  // A teammate answers H2 seven minutes after the hand-off; the channel takes it.
  await writer.apply([
    message('out:web:SH2#0', H2, 'outbound', 10, 'teammate:Ana'),
    { kind: 'status', _id: 'out:web:SH2#0', status: 'sent', channelMessageId: 'WEB-SH2', at: at(10) },
    { kind: 'delivery', _id: 'WEB-SH2', messageId: 'out:web:SH2#0', at: at(10) },
    {
      kind: 'action',
      action: { _id: 'act_site_q1', conversationId: Q1, channel: 'web', state: 'done', createdAt: at(11), updatedAt: at(11) },
    },
  ]);
  await rated(H1, 'sales', 5, 24 * 60 + 20);
  await rated(Q1, 'sales', 2, 24 * 60 + 21);
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
    firstReplyByTeammate: Object.keys(totals.firstReplyByTeammate),
    actionsRun: totals.actions.run,
  };
};

describe('by site', () => {
  test("a site's figures are its conversations'; the channel's and all channels' keep everything", async () => {
    expect(await figures('site=harbour')).toEqual({
      conversations: 2,
      distinct: 2,
      resolvedByAssistant: 1,
      messages: [2, 2],
      handoffs: 1,
      firstReplies: 1,
      firstReplyByTeammate: ['Ana'],
      actionsRun: 0,
    });
    expect(await figures('site=quay&channel=web')).toMatchObject({
      conversations: 1,
      distinct: 1,
      resolvedByAssistant: 1,
      messages: [1, 1],
      handoffs: 0,
      actionsRun: 1,
    });
    expect(await figures('channel=web')).toMatchObject({ conversations: 3, distinct: 3, messages: [3, 3], handoffs: 1, firstReplies: 1, actionsRun: 1 });
    expect(await figures('')).toMatchObject({ conversations: 4, distinct: 4, messages: [4, 3], handoffs: 1, firstReplies: 1 });
    // WhatsApp has no sites: a site's view of it is empty.
    expect(await figures('site=harbour&channel=whatsapp')).toMatchObject({ conversations: 0, messages: [0, 0] });
  });

  test('an unknown site is a 400 naming the sites; the CSV and the page take the site', async () => {
    const bad = await http.get(`/admin/reports/summary?site=nowhere`).set(bearer);
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error: 'site must be all or one of harbour, quay' });
    const csv = await http.get(`/admin/reports/csv/daily.csv?from=${DAY}&to=${DAY}&site=harbour`).set(bearer);
    expect(csv.status).toBe(200);
    expect(csv.headers['content-disposition']).toBe(`attachment; filename="daily-all-harbour-${DAY}-${DAY}.csv"`);
    expect(csv.text.split('\r\n')[1]).toMatch(new RegExp(`^${DAY},2,2,2,2,1,`));
    const signIn = await http.post('/admin/reports/sign-in').type('form').send({ token: TOKEN });
    const cookie = String(signIn.headers['set-cookie']).split(';')[0] ?? '';
    const page = await http.get(`/admin/reports?from=${DAY}&to=${DAY}&site=quay`).set('Cookie', cookie);
    expect(page.status).toBe(200);
    expect(page.text).toContain(
      '<label>Site<select name="site"><option value="all">All sites</option><option value="harbour">harbour</option><option value="quay" selected>quay</option></select></label>',
    );
    expect(page.text).toContain(`href="/admin/reports/csv/daily.csv?from=${DAY}&to=${DAY}&channel=all&site=quay"`);
  });

  test('a rebuild from MongoDB gives the same documents, the sites\u2019 included', async () => {
    const live = await documents();
    expect(live.map(({ _id }) => _id)).toEqual([
      `${DAY}|web`,
      `${DAY}|web~@sales`,
      `${DAY}|web~@support`,
      `${DAY}|web~harbour`,
      `${DAY}|web~quay`,
      `${DAY}|whatsapp`,
    ]);
    await reports.rebuild();
    expect(await documents()).toEqual(live);
  });

  test('satisfaction is the chosen one\u2019s answers', async () => {
    const response = await http.get(`/admin/reports/summary?from=${DAY}&to=${NEXT}&site=harbour`).set(bearer);
    expect(response.body.csat).toMatchObject({ asked: 1, responses: 1, score: 5 });
    const all = await http.get(`/admin/reports/summary?from=${DAY}&to=${NEXT}`).set(bearer);
    expect(all.body.csat).toMatchObject({ asked: 2, responses: 2 });
  });
});
