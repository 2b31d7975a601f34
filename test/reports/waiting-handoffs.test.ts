/**
 * Hand-offs waiting now, on real FerretDB and Redis through the real hand-off store, transcript
 * writer and roll-up: a hand-off open, or taken with no teammate's message the channel took since
 * it opened, is listed, oldest first, with its team, channel, role and transcript link, in the
 * summary JSON and on the page; one answered (a delivery id), ended, or only answered by the
 * assistant or by a refused message is (or is not) listed accordingly; the channel filter applies.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import express from 'express';
import request from 'supertest';
import { createHandoffStore, type HandoffStore } from '../../src/handoff/handoff-store.js';
import type { HandoffRequest } from '../../src/handoff/handoff-records.js';
import { createReportsFeature, type ReportsFeature } from '../../src/reports/index.js';
import type { TranscriptRecord } from '../../src/store/outbox.js';
import { createTranscriptWriter, type TranscriptWriter } from '../../src/store/transcript-writer.js';
import { startHarness, type Harness } from '../support/harness.js';

const TOKEN = 'reports-waiting-token-0123456789abcdef';
const ANA = { id: 'whatsapp:+447700900900', name: 'Ana', via: 'whatsapp' as const };

let harness: Harness;
let reports: ReportsFeature;
let handoffs: HandoffStore;
let writer: TranscriptWriter;
let http: ReturnType<typeof request>;

const link = (conversationId: string) => `https://shop.example.test/t/${encodeURIComponent(conversationId)}`;

function requestFor(conversationId: string, channel: string, team: 'sales' | 'support', roleId: string): HandoffRequest {
  return {
    team,
    reason: 'asked for a person',
    channel,
    conversationId,
    roleId,
    customer: { address: conversationId },
    contact: {},
    facts: {},
    lastMessages: [],
    destinations: [],
  };
}

/** A message to the customer: a teammate's (its role `teammate:<name>`) or the assistant's; taken by the channel or refused. */
function outbound(id: string, conversationId: string, channel: string, roleId: string, outcome: 'sent' | 'refused'): TranscriptRecord[] {
  const at = new Date().toISOString();
  const message: TranscriptRecord = {
    kind: 'message',
    message: { _id: id, conversationId, channel, direction: 'outbound', text: 'hello', status: 'pending', roleId, createdAt: at, updatedAt: at },
  };
  if (outcome === 'refused') return [message, { kind: 'status', _id: id, status: 'failed', errorMessage: 'outside the 24-hour window', at }];
  return [message, { kind: 'status', _id: id, status: 'sent', channelMessageId: `SM${id}`, at }, { kind: 'delivery', _id: `SM${id}`, messageId: id, at }];
}

const pause = () => new Promise((resolve) => setTimeout(resolve, 5));

beforeAll(async () => {
  harness = await startHarness({ worker: false });
  const { mongo, redis, logger, metrics, outbox } = harness.services;
  reports = createReportsFeature({
    connection: mongo,
    redis,
    logger,
    metrics,
    config: { adminToken: TOKEN, publicBaseUrl: 'http://127.0.0.1', channels: ['whatsapp', 'web'], prices: undefined },
    transcriptLink: link,
  });
  // Counted as the service counts them: the hand-offs' opening and end, the transcript writer's records.
  handoffs = reports.recordHandoffs(createHandoffStore(mongo));
  writer = createTranscriptWriter({ connection: mongo, outbox, batchSize: 10, logger, metrics, rollup: reports.recordTranscripts });
  const app = express();
  app.use(reports.router);
  http = request(app);
}, 60_000);

afterAll(async () => {
  await reports?.close();
  await harness?.close();
});

describe('hand-offs waiting now', () => {
  test('open or taken and not answered by a teammate, oldest first, with links; the channel filter applies', async () => {
    const opened: Record<string, string> = {};
    const open = async (name: string, channel: string, team: 'sales' | 'support', role: string) => {
      const conversation = `${channel}:waiting-${name}`;
      opened[name] = (await handoffs.open(requestFor(conversation, channel, team, role))).handoff._id;
      await pause();
      return conversation;
    };
    const a = await open('a', 'whatsapp', 'support', 'support');
    const b = await open('b', 'web', 'sales', 'sales');
    const c = await open('c', 'whatsapp', 'support', 'support');
    const d = await open('d', 'whatsapp', 'sales', 'sales');
    const e = await open('e', 'whatsapp', 'support', 'support');
    const f = await open('f', 'web', 'support', 'support');
    // B taken, nothing written yet; C taken and answered (the channel took it); D taken, its reply refused.
    for (const name of ['b', 'c', 'd']) await handoffs.take(opened[name] ?? '', ANA);
    await writer.apply(outbound('w-c1', c, 'whatsapp', 'teammate:Ana', 'sent'));
    await writer.apply(outbound('w-d1', d, 'whatsapp', 'teammate:Ana', 'refused'));
    // E closed without a reply; F answered only by the assistant.
    await handoffs.close(opened.e ?? '', ANA, 'done');
    await writer.apply(outbound('w-f1', f, 'web', 'support', 'sent'));

    const all = await http.get('/admin/reports/summary').set('Authorization', `Bearer ${TOKEN}`);
    expect(all.status).toBe(200);
    const listed = all.body.waitingNow.handoffs as { conversation: string; status: string; team: string; channel: string; role: string; transcript: string }[];
    expect(listed.map((one) => [one.conversation, one.status, one.team, one.channel, one.role])).toEqual([
      [a, 'open', 'support', 'whatsapp', 'support'],
      [b, 'taken', 'sales', 'web', 'sales'],
      [d, 'taken', 'sales', 'whatsapp', 'sales'],
      [f, 'open', 'support', 'web', 'support'],
    ]);
    expect(listed[0]?.transcript).toBe(link(a));
    expect(all.body.waitingNow.more).toBe(false);
    expect(e).toBeDefined();

    const web = await http.get('/admin/reports/summary?channel=web').set('Authorization', `Bearer ${TOKEN}`);
    expect((web.body.waitingNow.handoffs as { conversation: string }[]).map((one) => one.conversation)).toEqual([b, f]);

    // On the page: the section, one row each, the link to the transcript.
    const signIn = await http.post('/admin/reports/sign-in').type('form').send({ token: TOKEN });
    const cookie = String(signIn.headers['set-cookie'] ?? '').split(';')[0] ?? '';
    const page = await http.get('/admin/reports').set('Cookie', cookie);
    expect(page.text).toContain(`<h2 id="t-waiting">Hand-offs waiting now</h2><p>4 waiting for a teammate's first reply, oldest first (UTC).</p>`);
    expect(page.text).toContain(`<a href="${link(a).replace(/&/g, '&amp;')}">Open the conversation</a>`);
    expect(page.text.match(/<td>taken, no reply yet<\/td>/g)).toHaveLength(2);
  });
});
