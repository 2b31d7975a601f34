/**
 * The transcript writer is at-least-once: a batch can be written again (a writer killed after
 * MongoDB acknowledged but before the outbox entry was deleted, or a batch taken over from a
 * slow writer). Writing it again must change nothing: no second document, no status moved
 * backwards, no reply text replaced. A status applies only over a lower- or equal-ranked one.
 * And the AOF check at start-up says plainly when Redis would lose the ledger on a restart.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { TranscriptRecord } from '../../src/store/outbox.js';
import { checkRedisPersistence } from '../../src/store/redis-persistence.js';
import { createTranscriptWriter, type TranscriptWriter } from '../../src/store/transcript-writer.js';
import { startHarness, type Harness, type LogLine } from '../support/harness.js';
import { createLogger } from '../../src/logger.js';
import { startRestartableRedis, type RestartableRedisHandle } from '../support/services.js';
import { Redis } from 'ioredis';

let harness: Harness;
let writer: TranscriptWriter;
beforeAll(async () => {
  harness = await startHarness({ worker: false });
  const { mongo, outbox, logger, metrics } = harness.services;
  writer = createTranscriptWriter({ connection: mongo, outbox, batchSize: 10, logger, metrics });
});
afterAll(() => harness.close());

const at = (second: number) => new Date(Date.UTC(2026, 10, 30, 6, 0, second)).toISOString();
const conversationId = 'whatsapp:+447700908401';
const inbound = (text: string): TranscriptRecord => ({
  kind: 'message',
  message: {
    _id: 'in:whatsapp:SMwriter1',
    conversationId,
    channel: 'whatsapp',
    direction: 'inbound',
    text,
    channelMessageId: 'SMwriter1',
    status: 'received',
    createdAt: at(1),
    updatedAt: at(1),
  },
});
const part = (text: string, status: 'pending' | 'queued' = 'pending'): TranscriptRecord => ({
  kind: 'message',
  message: {
    _id: 'out:whatsapp:SMwriter1#0',
    conversationId,
    channel: 'whatsapp',
    direction: 'outbound',
    text,
    replyTo: 'SMwriter1',
    part: 0,
    partCount: 1,
    roleId: 'support',
    status,
    createdAt: at(2),
    updatedAt: at(2),
  },
});
const status = (value: 'queued' | 'delivered' | 'read' | 'failed' | 'undelivered', second: number, errorCode?: string): TranscriptRecord => ({
  kind: 'status',
  _id: 'out:whatsapp:SMwriter1#0',
  status: value,
  channelMessageId: 'SMout1',
  ...(errorCode ? { errorCode } : {}),
  at: at(second),
});

describe('the transcript writer', () => {
  const batch: TranscriptRecord[] = [
    { kind: 'conversation', _id: conversationId, channel: 'whatsapp', address: conversationId, displayName: 'Ada', at: at(0) },
    inbound('hello'),
    part('hi Ada'),
    status('queued', 3),
    { kind: 'delivery', _id: 'SMout1', messageId: 'out:whatsapp:SMwriter1#0', at: at(3) },
    status('read', 5),
  ];

  test('writes a batch replayed twice exactly once', async () => {
    await writer.apply(batch);
    await writer.apply(batch);
    const { transcripts } = harness.services;
    const messages = await transcripts.conversationMessages(conversationId);
    expect(messages.map((message) => [message._id, message.text, message.status])).toEqual([
      ['in:whatsapp:SMwriter1', 'hello', 'received'],
      ['out:whatsapp:SMwriter1#0', 'hi Ada', 'read'],
    ]);
    expect(await transcripts.conversations.countDocuments({ _id: conversationId })).toBe(1);
    expect(await transcripts.conversations.findById(conversationId).lean()).toMatchObject({ displayName: 'Ada', address: conversationId });
  });

  test('a replayed insert or an older status never moves a message back', async () => {
    // The part's record replayed after its statuses, and callbacks out of order.
    await writer.apply([part('hi Ada', 'pending'), status('delivered', 4), status('queued', 6)]);
    const stored = await harness.services.transcripts.messages.findById('out:whatsapp:SMwriter1#0').lean();
    expect(stored).toMatchObject({ text: 'hi Ada', status: 'read', channelMessageId: 'SMout1' });
  });

  test('a status written before its message record (that entry taken over late from a dead writer) keeps both', async () => {
    const early: TranscriptRecord = { kind: 'status', _id: 'out:whatsapp:SMwriter2#0', status: 'queued', channelMessageId: 'SMout2', at: at(9) };
    const late = part('second reply');
    if (late.kind !== 'message') throw new Error('not a message record');
    await writer.apply([early]);
    await writer.apply([{ kind: 'message', message: { ...late.message, _id: 'out:whatsapp:SMwriter2#0', replyTo: 'SMwriter2' } }]);
    expect(await harness.services.transcripts.messages.findById('out:whatsapp:SMwriter2#0').lean()).toMatchObject({
      text: 'second reply',
      status: 'queued',
      channelMessageId: 'SMout2',
      conversationId,
    });
  });

  test('a later record of the same rank wins (undelivered after failed keeps its own error code)', async () => {
    await writer.apply([status('failed', 7, '63016'), status('undelivered', 8, '63024')]);
    expect(await harness.services.transcripts.messages.findById('out:whatsapp:SMwriter1#0').lean()).toMatchObject({
      status: 'undelivered',
      errorCode: '63024',
    });
  });
});

describe('the Redis persistence check at start-up', () => {
  let aof: RestartableRedisHandle;
  beforeAll(async () => {
    aof = await startRestartableRedis();
  });
  afterAll(() => aof.stop());

  const capture = () => {
    const lines: LogLine[] = [];
    return { lines, logger: createLogger({ level: 'debug', sink: (line) => lines.push(JSON.parse(line) as LogLine) }) };
  };

  test('warns when AOF is off, is quiet when it is on', async () => {
    const off = capture();
    expect(await checkRedisPersistence(harness.services.redis, off.logger)).toBe('off');
    expect(off.lines).toContainEqual(expect.objectContaining({ level: 'warn', event: 'redis-aof-off', appendonly: 'no' }));
    const on = capture();
    const client = new Redis(aof.url);
    try {
      expect(await checkRedisPersistence(client, on.logger)).toBe('aof');
    } finally {
      client.disconnect();
    }
    expect(on.lines.filter((line) => line.level === 'warn')).toEqual([]);
  });

  test('a Redis that refuses CONFIG is tolerated with a note', async () => {
    const refused = capture();
    const client = new Redis(aof.url);
    try {
      Object.assign(client, { config: async () => Promise.reject(new Error("ERR unknown command 'CONFIG'")) });
      expect(await checkRedisPersistence(client, refused.logger)).toBe('unknown');
    } finally {
      client.disconnect();
    }
    expect(refused.lines).toContainEqual(expect.objectContaining({ level: 'info', event: 'redis-persistence-unchecked' }));
  });
});
