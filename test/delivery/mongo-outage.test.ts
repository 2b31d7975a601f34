/**
 * MongoDB is the durable record written behind the conversation, not a step a reply waits on.
 * A burst from several numbers while the database (FerretDB, its own instance) is frozen
 * (SIGSTOP: connections open, nothing answers) and, separately, killed and restarted: every
 * customer is answered during the outage, once and in order; `/readyz` says MongoDB is
 * `degraded` but stays 200; the outbox backlog grows and shows on its gauge; once MongoDB is
 * back every inbound message and every reply is in it exactly once. At TRANSCRIPT_OUTBOX_MAX,
 * new inbound messages get a 503 until the writer catches up.
 * Nothing of a turn is stubbed: the caller's identify read is served from its Redis cache (a
 * caller never seen is answered as not linked while MongoDB does not answer) and usage is
 * counted in Redis, so the whole turn is exercised.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { eventually, newMessageSid, startHarness, type Harness } from '../support/harness.js';
import { startRestartableFerretDb, type RestartableMongoHandle } from '../support/services.js';
import { transcriptsWritten } from '../support/settled.js';
import { burstMessages, countDeliveries, recordFigures, sendBurst, type BurstMessage } from './burst.js';

const answer = (body: string) => `answer to ${body}`;
const script = ({ userText }: { userText: string }) => ({ text: answer(userText) });
const RETRY_ENV = { MESSAGE_RETRY_BUDGET_MS: '120000', MESSAGE_RETRY_BACKOFF_MS: '250' };

async function start(database: RestartableMongoHandle, name: string, env: Record<string, string> = {}): Promise<Harness> {
  return startHarness({ env: { ...RETRY_ENV, MONGODB_URI: `${database.uri}${name}`, ...env }, script });
}

/**
 * Every inbound message and reply of the burst is in MongoDB once, each direction in order, with
 * its final status (a message received while an earlier one was being answered sorts before that answer).
 */
async function expectTranscripts(harness: Harness, burst: BurstMessage[][]): Promise<void> {
  for (const messages of burst) {
    const stored = await harness.services.transcripts.conversationMessages(conversationKeyFor(messages[0]!.from));
    const of = (direction: string) => stored.filter((message) => message.direction === direction).map((message) => [message.text, message.status]);
    expect(of('inbound')).toEqual(messages.map((message) => [message.body, 'received']));
    expect(of('outbound')).toEqual(messages.map((message) => [answer(message.body), 'queued']));
    expect(stored).toHaveLength(messages.length * 2);
    expect(new Set(stored.map((message) => message._id)).size).toBe(stored.length);
  }
  const conversations = await harness.services.transcripts.conversations
    .find({ _id: { $in: burst.map((messages) => conversationKeyFor(messages[0]!.from)) } })
    .lean();
  expect(conversations).toHaveLength(burst.length);
}

async function expectAnsweredDuringOutage(harness: Harness, burst: BurstMessage[][]) {
  const total = burst.flat().length;
  await eventually(() => harness.twilio.messages.length >= total || undefined, 60_000);
  const count = countDeliveries(harness.twilio, burst, answer);
  expect(count).toMatchObject({ lost: 0, duplicated: 0, outOfOrder: 0 });
  const ready = await harness.http.get('/readyz');
  expect(ready.status).toBe(200);
  expect(ready.body).toEqual({ status: 'degraded', checks: { redis: 'ok', mongodb: 'degraded' } });
  expect(await harness.services.outbox.backlog()).toBeGreaterThan(0);
  await eventually(() => harness.services.metrics.gaugeValue('transcript_outbox_backlog') > 0 || undefined);
  expect(await harness.services.metrics.render()).toMatch(/^transcript_outbox_backlog [1-9]/m);
  return count;
}

describe('MongoDB frozen (SIGSTOP) during a burst', () => {
  let database: RestartableMongoHandle;
  let harness: Harness;
  beforeAll(async () => {
    database = await startRestartableFerretDb();
    harness = await start(database, 'paused');
  });
  afterAll(async () => {
    database.resume();
    await harness.close();
    await database.stop();
  });

  test('every customer is answered during it, /readyz says degraded, and afterwards every message is in MongoDB once', async () => {
    const burst = burstMessages(6, 3, '81');
    database.pause();
    const pausedAt = Date.now();
    await sendBurst(harness, burst, 100);
    const count = await expectAnsweredDuringOutage(harness, burst);
    const backlog = await harness.services.outbox.backlog();
    database.resume();
    const resumedAt = Date.now();
    await transcriptsWritten(harness.services, 60_000);
    const drainedAt = Date.now();
    await expectTranscripts(harness, burst);
    expect((await harness.http.get('/readyz')).body).toEqual({ status: 'ready', checks: { redis: 'ok', mongodb: 'ok' } });
    await recordFigures('mongodb-paused', {
      messages: count.expected,
      lost: count.lost,
      duplicated: count.duplicated,
      answeredWithinMs: count.lastReplyAt - pausedAt,
      backlogAtResume: backlog,
      drainMs: drainedAt - resumedAt,
    });
  }, 150_000);
});

describe('MongoDB killed and restarted during a burst', () => {
  let database: RestartableMongoHandle;
  let harness: Harness;
  beforeAll(async () => {
    database = await startRestartableFerretDb();
    harness = await start(database, 'killed');
  });
  afterAll(async () => {
    await harness.close();
    await database.stop();
  });

  test('every customer is answered while it is down, and afterwards every message is in MongoDB once', async () => {
    const burst = burstMessages(6, 3, '82');
    // Some of the burst reaches MongoDB before the kill; the rest waits in the outbox.
    const first = burst.map((messages) => messages.slice(0, 1));
    await sendBurst(harness, first);
    await eventually(() => harness.twilio.messages.length >= first.length || undefined, 20_000);
    await database.kill();
    const killedAt = Date.now();
    await sendBurst(
      harness,
      burst.map((messages) => messages.slice(1)),
      100,
    );
    const count = await expectAnsweredDuringOutage(harness, burst);
    await database.restart();
    const restartedAt = Date.now();
    await transcriptsWritten(harness.services, 60_000);
    await expectTranscripts(harness, burst);
    await recordFigures('mongodb-killed', {
      messages: count.expected,
      lost: count.lost,
      duplicated: count.duplicated,
      answeredWithinMs: count.lastReplyAt - killedAt,
      drainMs: Date.now() - restartedAt,
    });
  }, 150_000);
});

describe('the outbox at TRANSCRIPT_OUTBOX_MAX', () => {
  let database: RestartableMongoHandle;
  let harness: Harness;
  beforeAll(async () => {
    database = await startRestartableFerretDb();
    harness = await start(database, 'bounded', { TRANSCRIPT_OUTBOX_MAX: '1' });
  });
  afterAll(async () => {
    database.resume();
    await harness.close();
    await database.stop();
  });

  test('refuses new inbound messages with 503 until MongoDB is back and the writer caught up', async () => {
    const customer = 'whatsapp:+447700908301';
    database.pause();
    await harness.sendWhatsapp({ from: customer, body: 'one' });
    await eventually(() => harness.twilio.messages.length >= 1 || undefined, 20_000);
    // One answered message is one entry (conversation, inbound, part, status and delivery id: its turn's records).
    await eventually(() => harness.services.metrics.gaugeValue('transcript_outbox_backlog') >= 1 || undefined);
    const refused = await harness.sendWhatsapp({ from: customer, body: 'two', messageSid: newMessageSid() });
    expect(refused.status).toBe(503);
    expect(harness.logs).toContainEqual(expect.objectContaining({ level: 'error', event: 'transcript-outbox-full' }));
    database.resume();
    await transcriptsWritten(harness.services, 60_000);
    await eventually(() => harness.services.metrics.gaugeValue('transcript_outbox_backlog') === 0 || undefined);
    expect((await harness.sendWhatsapp({ from: customer, body: 'two' })).status).toBe(200);
    await eventually(() => harness.twilio.messages.length >= 2 || undefined, 20_000);
    expect(harness.twilio.messages.map((message) => message.body)).toEqual([answer('one'), answer('two')]);
  }, 120_000);
});
