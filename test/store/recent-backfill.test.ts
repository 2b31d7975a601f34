/**
 * Rebuilding recent history after Redis lost it, or over existing data
 * (`src/store/recent-backfill.ts`): MongoDB holds conversations and their messages, and Redis
 * has no hot copy of them. A worker's start-up rebuilds each active conversation's history in
 * Redis once, in the background, from its last messages in MongoDB, so the next turn's model
 * sees it. Here the data is as the version before the hot path stored it (each conversation
 * document also carrying its `recent`, no longer written since): the messages are what counts.
 * Left out: conversations quiet for longer than the hot copy lives. A hot copy a turn already
 * made is never overwritten; several processes copy once.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { createRecentBackfill } from '../../src/store/recent-backfill.js';
import { transcriptKeys } from '../../src/store/transcript-keys.js';
import { eventually, newMessageSid, startHarness, type Harness } from '../support/harness.js';
import { turnsSettled } from '../support/settled.js';

const DAY = 24 * 60 * 60 * 1000;

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness({ worker: false, script: (call) => ({ text: `Answer to: ${call.userText}` }) });
});
afterAll(() => harness.close());

/**
 * Stores a conversation as the MongoDB-only version did (commit 58037af): one document with its
 * inline recent history ({ id, direction, text }, ≤ 20), one document per message keyed by its
 * ledger key, `updatedAt` moved by every write of the history.
 */
async function seedOldConversation(customer: string, exchanges: [string, string][], lastActive: Date, options: { newerMessageAt?: Date } = {}) {
  const key = conversationKeyFor(customer);
  const { conversations, messages } = harness.services.transcripts;
  const recent: { id: string; direction: 'inbound' | 'outbound'; text: string }[] = [];
  const documents = [];
  let at = lastActive.getTime() - exchanges.length * 60_000;
  for (const [question, answer] of exchanges) {
    const sid = newMessageSid();
    const inbound = { _id: `in:whatsapp:${sid}`, direction: 'inbound' as const, text: question, channelMessageId: sid, status: 'received' };
    const outbound = {
      _id: `out:whatsapp:${sid}#0`,
      direction: 'outbound' as const,
      text: answer,
      replyTo: sid,
      part: 0,
      partCount: 1,
      roleId: 'support',
      status: 'read',
    };
    for (const message of [inbound, outbound]) {
      at += 20_000;
      documents.push({ ...message, conversationId: key, channel: 'whatsapp', createdAt: new Date(at), updatedAt: new Date(at) });
      recent.push({ id: message._id, direction: message.direction, text: message.text });
    }
  }
  await messages.collection.insertMany(documents as never[]);
  await conversations.collection.insertOne({
    _id: key,
    channel: 'whatsapp',
    address: customer,
    displayName: 'Maya',
    recent,
    createdAt: new Date(lastActive.getTime() - 30 * DAY),
    // The history's last write, or later when a newer message came after it (and its history was not written).
    updatedAt: options.newerMessageAt ?? new Date(at + 500),
  } as never);
  return recent;
}

const ACTIVE = 'whatsapp:+447700916001';
const QUIET = 'whatsapp:+447700916002';
const STALE = 'whatsapp:+447700916003';
const HOT = 'whatsapp:+447700916004';
const database = () => harness.services.mongo.name;

beforeAll(async () => {
  const now = Date.now();
  await seedOldConversation(
    ACTIVE,
    [
      ['My order 5521 never arrived', 'Sorry about that. I have asked the courier where it is.'],
      ['Any news from the courier?', 'It is at the depot in Leeds and goes out tomorrow.'],
    ],
    new Date(now - 2 * DAY),
  );
  await seedOldConversation(QUIET, [['Do you ship to Norway?', 'Yes, in 3–5 days.']], new Date(now - 40 * DAY));
  await seedOldConversation(STALE, [['Is the shop open on Sunday?', 'Yes, from ten to four.']], new Date(now - 5 * DAY), {
    newerMessageAt: new Date(now - 2 * DAY),
  });
  // The newer message its document's `recent` lacks is in the transcript.
  await harness.services.transcripts.messages.collection.insertOne({
    _id: 'in:whatsapp:SMstale2',
    conversationId: conversationKeyFor(STALE),
    channel: 'whatsapp',
    direction: 'inbound',
    text: 'And on Saturday?',
    channelMessageId: 'SMstale2',
    status: 'received',
    createdAt: new Date(now - 2 * DAY),
    updatedAt: new Date(now - 2 * DAY),
  } as never);
  await seedOldConversation(HOT, [['What is my balance?', 'It is 42 pounds.']], new Date(now - 2 * DAY));
  // HOT already has a hot copy: a turn of the new version ran before the copy.
  await harness.services.transcripts.openConversation({ key: conversationKeyFor(HOT), channel: 'whatsapp', address: HOT });
  await harness.services.transcripts.saveRecent(conversationKeyFor(HOT), [
    { id: 'in:whatsapp:SMnew', direction: 'inbound', text: 'Hello again' },
    { id: 'out:whatsapp:SMnew#0', direction: 'outbound', text: 'Answer to: Hello again' },
  ]);
  // Redis as after an upgrade, or after it lost its data: no hot copy of the others, no marker.
  const { redis } = harness.services;
  // One key per command: on a cluster the keys live on different slots.
  for (const customer of [ACTIVE, QUIET, STALE]) await redis.del(transcriptKeys.conversation(conversationKeyFor(customer)));

  harness.services.startWorker();
  await harness.worker?.waitUntilReady();
  await eventually(() => harness.logs.find((line) => line.event === 'recent-backfill-done' && line.database === database()), 30_000);
}, 60_000);

/** The customer writes again; resolves to the model's reply call for it. */
async function nextTurn(customer: string, text: string) {
  expect((await harness.sendWhatsapp({ from: customer, body: text })).status).toBe(200);
  await eventually(() => harness.twilio.messages.some((message) => message.to === customer && message.body === `Answer to: ${text}`) || undefined, 20_000);
  await turnsSettled(harness.services);
  const [call] = harness.models.replyCalls().filter((entry) => entry.userMessages.includes(text));
  if (!call) throw new Error(`no reply call for ${text}`);
  return { userMessages: call.userMessages.filter((message) => !message.startsWith('<customer-context>')), promptText: call.promptText };
}

describe('after the copy', () => {
  test("an active conversation's next turn sees its history from before the upgrade", async () => {
    const { userMessages, promptText } = await nextTurn(ACTIVE, 'Did it go out today?');
    expect(userMessages).toEqual(['My order 5521 never arrived', 'Any news from the courier?', 'Did it go out today?']);
    expect(promptText).toContain('It is at the depot in Leeds and goes out tomorrow.');
    expect(promptText.indexOf('I have asked the courier')).toBeLessThan(promptText.indexOf('Did it go out today?'));
    // The hot copy lives as long as it would have since the conversation's last message.
    const ttl = await harness.services.redis.ttl(transcriptKeys.conversation(conversationKeyFor(ACTIVE)));
    expect(ttl).toBeGreaterThan(27 * 24 * 3600);
    expect(ttl).toBeLessThanOrEqual(30 * 24 * 3600);
  });

  test('a conversation quiet for longer than a hot copy lives starts afresh', async () => {
    const { userMessages, promptText } = await nextTurn(QUIET, 'Hi, me again');
    expect(userMessages).toEqual(['Hi, me again']);
    expect(promptText).not.toContain('Norway');
  });

  test('a document whose `recent` lacks newer messages is rebuilt from the messages, with no hole', async () => {
    const { userMessages, promptText } = await nextTurn(STALE, 'And on Monday?');
    expect(userMessages).toEqual(['Is the shop open on Sunday?', 'And on Saturday?', 'And on Monday?']);
    expect(promptText).toContain('Yes, from ten to four.');
  });

  test('a hot copy a turn already made is kept, not overwritten', async () => {
    const { userMessages, promptText } = await nextTurn(HOT, 'And now?');
    expect(userMessages).toEqual(['Hello again', 'And now?']);
    expect(promptText).not.toContain('balance');
  });

  test('the copy reported what it did, once', () => {
    const done = harness.logs.filter((line) => line.event === 'recent-backfill-done' && line.database === database());
    expect(done).toEqual([expect.objectContaining({ scanned: 4, copied: 2, present: 1, skipped: 0 })]);
  });
});

describe('once per Redis', () => {
  test('processes starting together copy once; a Redis that lost its data is copied again', async () => {
    const { redis, transcripts, logger } = harness.services;
    // Its own marker (another database name), over the same documents.
    const backfill = () =>
      createRecentBackfill({ redis, conversations: transcripts.conversations, messages: transcripts.messages, database: `${database()}-again`, logger });
    const customer = 'whatsapp:+447700916005';
    await seedOldConversation(customer, [['Can I change my delivery address?', 'Yes: reply with the new one.']], new Date(Date.now() - DAY));
    const key = transcriptKeys.conversation(conversationKeyFor(customer));

    const reports = await Promise.all([backfill().run(), backfill().run(), backfill().run()]);
    expect(reports.map((report) => report.outcome).sort()).toEqual(['busy', 'busy', 'copied']);
    expect(JSON.parse((await redis.hget(key, 'recent')) ?? '[]')).toHaveLength(2);
    expect(await backfill().run()).toMatchObject({ outcome: 'already-done', copied: 0 });

    // Redis lost its data: the hot copy and the marker are gone; the next start copies again.
    await redis.del(key);
    await redis.del(`asst:tx:backfill:done:${database()}-again`);
    expect(await backfill().run()).toMatchObject({ outcome: 'copied' });
    expect(JSON.parse((await redis.hget(key, 'recent')) ?? '[]')).toEqual([
      expect.objectContaining({ direction: 'inbound', text: 'Can I change my delivery address?' }),
      expect.objectContaining({ direction: 'outbound', text: 'Yes: reply with the new one.' }),
    ]);
  });
});
