/**
 * A backlog lands in one piece on the embedded database. After an outage (or a slow writer) the
 * transcript writer takes a full batch: many status records (delivered callbacks) for replies
 * MongoDB already holds. FerretDB 1.x on SQLite keeps a connection per matched update until the
 * command ends, and its pool has 100: one command of ~100 such updates never finished and every
 * other client waited behind it, for good (the bench's 50k seed, a starting worker). Each status
 * must land, and the database must keep answering. Its own FerretDB: a wedge stays in this file.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { TranscriptRecord } from '../../src/store/outbox.js';
import { createTranscriptWriter, type TranscriptWriter } from '../../src/store/transcript-writer.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { startRestartableFerretDb, type RestartableMongoHandle } from '../support/services.js';

let database: RestartableMongoHandle;
let harness: Harness;
let writer: TranscriptWriter;
beforeAll(async () => {
  database = await startRestartableFerretDb();
  harness = await startHarness({ worker: false, env: { MONGODB_URI: `${database.uri}backlog?monitorCommands=true` } });
  const { mongo, outbox, logger, metrics } = harness.services;
  writer = createTranscriptWriter({ connection: mongo, outbox, batchSize: 200, logger, metrics });
});
afterAll(async () => {
  // A wedged FerretDB answers nothing: stop it first so closing the harness does not wait on it.
  await database.stop();
  await harness.close();
});

const at = (second: number) => new Date(Date.UTC(2026, 10, 30, 7, 0, second)).toISOString();
const REPLIES = 75;
const replyId = (index: number) => `out:whatsapp:SMbacklog${index}#0`;
const reply = (index: number): TranscriptRecord => ({
  kind: 'message',
  message: {
    _id: replyId(index),
    conversationId: `whatsapp:+4477009085${String(index % 30).padStart(2, '0')}`,
    channel: 'whatsapp',
    direction: 'outbound',
    text: `answer ${index}`,
    replyTo: `SMbacklog${index}`,
    part: 0,
    partCount: 1,
    roleId: 'support',
    status: 'queued',
    createdAt: at(1),
    updatedAt: at(1),
  },
});
const delivered = (index: number): TranscriptRecord => ({
  kind: 'status',
  _id: replyId(index),
  status: 'delivered',
  channelMessageId: `SMsent${index}`,
  at: at(5),
});

describe('the transcript writer on FerretDB', () => {
  test('a batch of 75 delivered statuses for stored replies (150 matched updates) lands whole, and MongoDB answers afterwards', async () => {
    const ids = Array.from({ length: REPLIES }, (_, index) => replyId(index));
    await writer.apply(ids.map((_, index) => reply(index)));
    await writer.apply(ids.map((_, index) => delivered(index)));
    const stored = await harness.services.transcripts.messages.find({ _id: { $in: ids } }).lean();
    const rows = (list: [string, string, string | undefined][]) => list.sort((a, b) => a[0].localeCompare(b[0]));
    expect(rows(stored.map((message) => [message._id, message.status, message.channelMessageId]))).toEqual(
      rows(ids.map((id, index) => [id, 'delivered', `SMsent${index}`])),
    );
  }, 60_000);

  test('a write outlasting its timeout (server frozen) is sent once — not again beside itself, nor after it landed late — and lands once the server answers', async () => {
    const { mongo, outbox, logger, metrics, transcripts } = harness.services;
    // Connections already open, so a second write would start at once even while the server is frozen.
    await Promise.all(Array.from({ length: 4 }, () => transcripts.messages.findOne({ _id: 'none' }).lean()));
    const running = new Set<number>();
    let most = 0;
    let started = 0;
    const client = mongo.getClient();
    client.on('commandStarted', (event) => {
      // The replies are new: one insert (a retry would be a second one, or its updates).
      if (event.commandName !== 'update' && event.commandName !== 'insert') return;
      started += 1;
      running.add(event.requestId);
      most = Math.max(most, running.size);
    });
    const settle = (event: { requestId: number }) => running.delete(event.requestId);
    client.on('commandSucceeded', settle);
    client.on('commandFailed', settle);
    const ids = [200, 201, 202].map(replyId);
    await outbox.append([200, 201, 202].map(reply));
    database.pause();
    const frozen = createTranscriptWriter({ connection: mongo, outbox, batchSize: 200, logger, metrics });
    frozen.start();
    try {
      await eventually(() => harness.logs.some((line) => line.event === 'transcript-write-retrying') || undefined, 30_000);
      // Before the fix the next attempt started 250 ms after the timeout, beside the first.
      await sleep(2_000);
    } finally {
      database.resume();
    }
    await eventually(async () => ((await transcripts.messages.countDocuments({ _id: { $in: ids } })) === ids.length ? true : undefined), 30_000);
    await eventually(async () => ((await outbox.backlog()) === 0 ? true : undefined), 30_000);
    await frozen.close();
    // Once, not again beside itself nor after it landed (each attempt is one command here).
    expect(most).toBe(1);
    expect(started).toBe(1);
  }, 90_000);
});
