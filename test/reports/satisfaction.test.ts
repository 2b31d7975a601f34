/**
 * Satisfaction on the reports, on real FerretDB and Redis: answers written by the satisfaction
 * question's own store (`csat`), a hand-off's team from the hand-offs. The summary has the 1–5
 * spread, the response rate (answered ÷ asked), the assistant alone vs after a teammate, by team
 * and by site, and the latest comments with their channel, conversation and transcript link; the
 * page shows them and links each comment to its transcript page; every answer downloads as CSV;
 * the question's messages (question, comment prompt, thanks) count as messages out, on their day.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import express from 'express';
import request from 'supertest';
import type { PendingQuestion } from '../../src/csat/csat-state.js';
import { createCsatStore } from '../../src/csat/csat-store.js';
import { createReportsFeature, type ReportsFeature } from '../../src/reports/index.js';
import { createSatisfaction } from '../../src/reports/satisfaction.js';
import { createTranscriptLinks } from '../../src/transcripts/transcript-link.js';
import { startHarness, type Harness } from '../support/harness.js';

const TOKEN = 'reports-csat-token-0123456789abcdef';
const DAY1 = '2026-11-02';
const DAY2 = '2026-11-03';
const at = (day: string, minute: number) => Date.parse(`${day}T09:00:00Z`) + minute * 60_000;

let harness: Harness;
let reports: ReportsFeature;
let http: ReturnType<typeof request>;
const links = createTranscriptLinks({ secret: 'reports-csat-link-secret-0123456789abcdef', publicBaseUrl: 'https://shop.example.test', ttlHours: 24 });

/** A question asked (and maybe rated, maybe commented) through the satisfaction question's store. */
async function question(
  conversation: string,
  askedAt: number,
  answer?: { score: number; at: number; comment?: string; commentAt?: number },
  handoffId?: string,
) {
  const store = createCsatStore(harness.services.mongo);
  const channel = conversation.split(':')[0] ?? 'whatsapp';
  const pending: PendingQuestion = {
    id: `${conversation}|${askedAt}`,
    stage: 'score',
    until: askedAt + 86_400_000,
    language: 'en',
    askedAt,
    channel,
    roleId: 'support',
    withPerson: handoffId !== undefined,
    trigger: handoffId ? 'handed_back' : 'quiet',
    ...(handoffId ? { handoffId } : {}),
  };
  await store.asked(conversation, pending);
  if (!answer) return;
  const rated = { ...pending, score: answer.score, answeredVia: 'tap' as const, answeredAt: answer.at };
  await store.answered(conversation, rated);
  if (answer.comment) await store.commented(conversation, rated, answer.comment, answer.commentAt ?? answer.at);
}

beforeAll(async () => {
  harness = await startHarness({ worker: false });
  const { mongo, redis, logger, metrics } = harness.services;
  reports = createReportsFeature({
    connection: mongo,
    redis,
    logger,
    metrics,
    config: { adminToken: TOKEN, publicBaseUrl: 'http://127.0.0.1', channels: ['whatsapp', 'web'], prices: undefined },
    csat: createSatisfaction(mongo, (conversationId) => links.url(conversationId)),
    today: () => '2026-11-20',
  });
  const app = express();
  app.use(reports.router);
  http = request(app);
  await mongo.collection('handoffs').insertOne({ _id: 'ho_csat_1' as never, team: 'support', conversationId: 'whatsapp:+447700900401', channel: 'whatsapp' });
  // After a teammate (support): 2, commented the next day.
  await question('whatsapp:+447700900401', at(DAY1, 0), { score: 2, at: at(DAY1, 5), comment: 'Took ages', commentAt: at(DAY2, 1) }, 'ho_csat_1');
  // The assistant alone on the web, two sites: a 5 with a comment, a 4, one not answered.
  await question('web:harbour:visitor-1:chat-1', at(DAY1, 10), { score: 5, at: at(DAY1, 11), comment: 'Spot on' });
  await question('web:harbour:visitor-2:chat-1', at(DAY1, 20), { score: 4, at: at(DAY1, 21) });
  await question('web:quay:visitor-3:chat-1', at(DAY2, 30));
  // Asked the day before the range, answered in it: its prompt is a message of DAY1, the question is not.
  await question('whatsapp:+447700900402', at('2026-11-01', 14 * 60), { score: 3, at: at(DAY1, -9 * 60 + 30) });
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

describe('satisfaction', () => {
  test('the summary has the spread, the response rate, who answered before, team, site and linked comments', async () => {
    const { csat } = await summary(`from=${DAY1}&to=${DAY2}&channel=all`);
    expect(csat).toMatchObject({
      asked: 4,
      responses: 3,
      responseRate: 0.75,
      score: 11 / 3,
      distribution: { '1': 0, '2': 1, '3': 0, '4': 1, '5': 1 },
      byPerson: { assistantAlone: { asked: 3, responses: 2, score: 4.5 }, afterTeammate: { asked: 1, responses: 1, score: 2 } },
      byTeam: { support: { asked: 1, responses: 1, score: 2 } },
      bySite: {
        harbour: { asked: 2, responses: 2, score: 4.5 },
        quay: { asked: 1, responses: 0, score: null },
        whatsapp: { asked: 1, responses: 1, score: 2 },
      },
    });
    expect(csat.comments).toEqual([
      {
        at: new Date(at(DAY2, 1)).toISOString(),
        rating: 2,
        text: 'Took ages',
        channel: 'whatsapp',
        conversation: 'whatsapp:+447700900401',
        transcript: expect.any(String),
      },
      {
        at: new Date(at(DAY1, 11)).toISOString(),
        rating: 5,
        text: 'Spot on',
        channel: 'web',
        conversation: 'web:harbour:visitor-1:chat-1',
        transcript: expect.any(String),
      },
    ]);
    expect(csat.comments[0].transcript).toMatch(/^https:\/\/shop\.example\.test\/transcripts\/whatsapp%3A%2B447700900401\?expires=\d+&sig=[\w-]{43}$/);
    const web = await summary(`from=${DAY1}&to=${DAY2}&channel=web`);
    expect(web.csat).toMatchObject({ asked: 3, responses: 2, bySite: { harbour: { asked: 2 }, quay: { asked: 1 } } });
  });

  test("the question's messages are messages out, on the day each was sent", async () => {
    const body = await summary(`from=${DAY1}&to=${DAY2}&channel=all`);
    // DAY1: 3 questions, 4 comment prompts (one for a question asked the day before), 1 thanks. DAY2: 1 question, 1 thanks.
    expect(body.days.map((day: { ratingMessages: number; messagesOut: number }) => [day.ratingMessages, day.messagesOut])).toEqual([
      [8, 8],
      [2, 2],
    ]);
    expect(body.totals.messagesOut).toBe(10);
    const daily = await http.get(`/admin/reports/csv/daily.csv?from=${DAY1}&to=${DAY2}`).set('Authorization', `Bearer ${TOKEN}`);
    expect(daily.text.split('\r\n')[1]).toMatch(new RegExp(`^${DAY1},0,0,0,8,.*,8$`));
  });

  test('every answer downloads as CSV', async () => {
    const response = await http.get(`/admin/reports/csv/answers.csv?from=${DAY1}&to=${DAY2}`).set('Authorization', `Bearer ${TOKEN}`);
    expect(response.status).toBe(200);
    expect(response.headers['content-disposition']).toBe(`attachment; filename="answers-all-${DAY1}-${DAY2}.csv"`);
    const lines = response.text.trim().split('\r\n');
    expect(lines[0]).toBe('asked at,answered at,channel,site,conversation,answered by,team,rating,comment');
    expect(lines.slice(1)).toEqual([
      `${new Date(at(DAY1, 0)).toISOString()},${new Date(at(DAY1, 5)).toISOString()},whatsapp,whatsapp,whatsapp:+447700900401,a teammate,support,2,Took ages`,
      `${new Date(at(DAY1, 10)).toISOString()},${new Date(at(DAY1, 11)).toISOString()},web,harbour,web:harbour:visitor-1:chat-1,the assistant alone,,5,Spot on`,
      `${new Date(at(DAY1, 20)).toISOString()},${new Date(at(DAY1, 21)).toISOString()},web,harbour,web:harbour:visitor-2:chat-1,the assistant alone,,4,`,
    ]);
  });

  test('the page shows the spread, the breakdown and each comment linked to its transcript', async () => {
    const signIn = await http.post('/admin/reports/sign-in').type('form').send({ token: TOKEN });
    const cookie = String(signIn.headers['set-cookie']).split(';')[0] ?? '';
    const page = await http.get(`/admin/reports?from=${DAY1}&to=${DAY2}`).set('Cookie', cookie);
    expect(page.status).toBe(200);
    expect(page.text).toContain('3.67 / 5 from 3 answers to 4 questions asked (75% answered)');
    expect(page.text).toContain('<title id="c-csat-t">Ratings, 1 to 5</title><desc id="c-csat-d">5: 1, 4: 1, 3: 0, 2: 1, 1: 0</desc>');
    expect(page.text).toContain('<th scope="row">team</th><td>support</td>');
    expect(page.text).toMatch(
      /<q>Took ages<\/q>.*<a href="https:\/\/shop\.example\.test\/transcripts\/whatsapp%3A%2B447700900401\?expires=\d+&amp;sig=[\w-]{43}">Open the conversation<\/a>/,
    );
    expect(page.text).toContain(`href="/admin/reports/csv/answers.csv?from=${DAY1}&to=${DAY2}&channel=all"`);
  });

  test("in the shop's time zone, an answer counts on the shop's day it was asked, and so do its messages", async () => {
    const { mongo, redis, logger, metrics } = harness.services;
    const madrid = createReportsFeature({
      connection: mongo,
      redis,
      logger,
      metrics,
      config: { adminToken: TOKEN, publicBaseUrl: 'http://127.0.0.1', channels: ['whatsapp', 'web'], prices: undefined },
      csat: createSatisfaction(mongo, (conversationId) => links.url(conversationId)),
      today: () => '2026-11-20',
      timeZone: 'Europe/Madrid',
    });
    const app = express();
    app.use(madrid.router);
    // 23:30 UTC on 9 November is 00:30 on the 10th in Madrid; rated at 23:40 UTC, also the 10th there.
    await question('whatsapp:+447700900403', Date.parse('2026-11-09T23:30:00Z'), { score: 5, at: Date.parse('2026-11-09T23:40:00Z') });
    const read = async (day: string) => {
      const response = await request(app).get(`/admin/reports/summary?from=${day}&to=${day}&channel=whatsapp`).set('Authorization', `Bearer ${TOKEN}`);
      expect(response.status).toBe(200);
      return response.body;
    };
    const tenth = await read('2026-11-10');
    expect(tenth.csat).toMatchObject({ asked: 1, responses: 1, score: 5 });
    expect(tenth.days[0]).toMatchObject({ day: '2026-11-10', ratingMessages: 2, messagesOut: 2 });
    const ninth = await read('2026-11-09');
    expect(ninth.csat).toBeNull();
    expect(ninth.days[0]).toMatchObject({ ratingMessages: 0 });
    // The page names the days it counts.
    const signIn = await request(app).post('/admin/reports/sign-in').type('form').send({ token: TOKEN });
    const cookie = String(signIn.headers['set-cookie']).split(';')[0] ?? '';
    const page = await request(app).get('/admin/reports?from=2026-11-10&to=2026-11-10').set('Cookie', cookie);
    expect(page.text).toContain('2026-11-10 to 2026-11-10 (Europe/Madrid days)');
    await madrid.close();
  });
});
