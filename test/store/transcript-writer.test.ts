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
import { connectMongo, transcriptModels } from '../../src/store/transcript-store.js';
import type { Connection } from 'mongoose';
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

describe("folding a batch's records of one document", () => {
  let watched: Connection;
  let folding: TranscriptWriter;
  /** Statements the writer sent, by command and collection (`update messages`: 2 for two updates). */
  const statements = new Map<string, number>();
  /** The commands the writer sent, in order: name, collection, the documents' ids. */
  const commands: string[] = [];
  beforeAll(async () => {
    const uri = new URL(process.env.TEST_MONGODB_URI ?? '');
    uri.pathname = `/${harness.services.mongo.name}`;
    uri.searchParams.set('monitorCommands', 'true');
    watched = await connectMongo(uri.toString());
    watched.getClient().on('commandStarted', (event) => {
      const command = event.command as { updates?: unknown[]; documents?: unknown[] };
      const collection = String(event.command[event.commandName] as unknown);
      const count = (command.updates ?? command.documents ?? []).length;
      if (count > 0) statements.set(`${event.commandName} ${collection}`, (statements.get(`${event.commandName} ${collection}`) ?? 0) + count);
      const written = (command.updates ?? command.documents ?? []).map((one) => {
        const { q, _id } = one as { q?: { _id?: unknown }; _id?: unknown };
        return String(q?._id ?? _id);
      });
      if (count > 0) commands.push(`${event.commandName} ${collection}: ${[...new Set(written)].join(' ')}`);
    });
    const { outbox, logger, metrics } = harness.services;
    folding = createTranscriptWriter({ connection: watched, outbox, batchSize: 10, logger, metrics });
  });
  afterAll(() => watched.close());

  const conversation = (number: string, second: number, displayName?: string): TranscriptRecord => ({
    kind: 'conversation',
    _id: `whatsapp:${number}`,
    channel: 'whatsapp',
    address: `whatsapp:${number}`,
    ...(displayName ? { displayName } : {}),
    at: at(second),
  });
  const turn = (number: string, sid: string, second: number): TranscriptRecord[] => {
    const id = `out:whatsapp:${sid}#0`;
    return [
      conversation(number, second),
      {
        kind: 'message',
        message: {
          _id: `in:whatsapp:${sid}`,
          conversationId: `whatsapp:${number}`,
          channel: 'whatsapp',
          direction: 'inbound',
          text: `question ${sid}`,
          channelMessageId: sid,
          status: 'received',
          createdAt: at(second),
          updatedAt: at(second),
        },
      },
      {
        kind: 'message',
        message: {
          _id: id,
          conversationId: `whatsapp:${number}`,
          channel: 'whatsapp',
          direction: 'outbound',
          text: `answer ${sid}`,
          replyTo: sid,
          part: 0,
          partCount: 1,
          roleId: 'support',
          status: 'pending',
          createdAt: at(second + 1),
          updatedAt: at(second + 1),
        },
      },
      { kind: 'status', _id: id, status: 'queued', channelMessageId: `SMout${sid}`, at: at(second + 2) },
      { kind: 'delivery', _id: `SMout${sid}`, messageId: id, at: at(second + 2) },
    ];
  };
  const stored = async (ids: string[]) => {
    const found = await harness.services.transcripts.messages.find({ _id: { $in: ids } }).lean();
    return Object.fromEntries(found.map((message) => [message._id, [message.status, message.channelMessageId ?? null, message.text]]));
  };

  test('new messages are inserted with their final status: no update of a message, one upsert per conversation', async () => {
    statements.clear();
    // Three turns of one conversation and one of another, as a full batch holds them.
    await folding.apply([...turn('+447700908501', 'SMfold1', 10), ...turn('+447700908501', 'SMfold2', 20), ...turn('+447700908502', 'SMfold3', 30)]);
    expect(Object.fromEntries(statements)).toEqual({ 'update conversations': 2, 'insert messages': 1 * 6, 'insert deliveries': 3 });
    expect(await stored(['in:whatsapp:SMfold1', 'out:whatsapp:SMfold1#0', 'out:whatsapp:SMfold2#0', 'out:whatsapp:SMfold3#0'])).toEqual({
      'in:whatsapp:SMfold1': ['received', 'SMfold1', 'question SMfold1'],
      'out:whatsapp:SMfold1#0': ['queued', 'SMoutSMfold1', 'answer SMfold1'],
      'out:whatsapp:SMfold2#0': ['queued', 'SMoutSMfold2', 'answer SMfold2'],
      'out:whatsapp:SMfold3#0': ['queued', 'SMoutSMfold3', 'answer SMfold3'],
    });
    const { conversations } = harness.services.transcripts;
    // Created by the first record, kept recent by the latest inbound message.
    expect(await conversations.findById('whatsapp:+447700908501').lean()).toMatchObject({ createdAt: new Date(at(10)), updatedAt: new Date(at(20)) });
    expect(await harness.services.transcripts.messages.countDocuments({ conversationId: 'whatsapp:+447700908501' })).toBe(4);
  });

  test('a conversation written within the hour (same name) is not written again: renamed, or an hour on, it is', async () => {
    const number = '+447700908509';
    const id = `whatsapp:${number}`;
    await folding.apply(turn(number, 'SMtouch1', 100));
    statements.clear();
    // The next turns, minutes apart: their messages only.
    await folding.apply(turn(number, 'SMtouch2', 400));
    await folding.apply([conversation(number, 500), conversation(number, 600, 'Ada')]);
    expect(statements.get('update conversations')).toBe(1);
    expect(await harness.services.transcripts.conversations.findById(id).lean()).toMatchObject({ displayName: 'Ada', updatedAt: new Date(at(600)) });
    statements.clear();
    await folding.apply([conversation(number, 1200, 'Ada'), ...turn(number, 'SMtouch3', 1300)]);
    expect(statements.get('update conversations')).toBeUndefined();
    expect(await harness.services.transcripts.messages.countDocuments({ conversationId: id })).toBe(6);
    // More than an hour after the last write: retention must see it.
    await folding.apply(turn(number, 'SMtouch4', 600 + 3601));
    expect(statements.get('update conversations')).toBe(1);
    expect(await harness.services.transcripts.conversations.findById(id).lean()).toMatchObject({ displayName: 'Ada', updatedAt: new Date(at(600 + 3601)) });
  });

  test('a conversation renamed twice in a batch keeps the last name, and its first creation time', async () => {
    await folding.apply([conversation('+447700908503', 40, 'Grace'), conversation('+447700908503', 41, 'Grace H.'), conversation('+447700908503', 39)]);
    expect(await harness.services.transcripts.conversations.findById('whatsapp:+447700908503').lean()).toMatchObject({
      displayName: 'Grace H.',
      createdAt: new Date(at(40)),
      updatedAt: new Date(at(41)),
    });
  });

  test('a late, older rename never replaces a newer name: across batches (and writers), and within one batch', async () => {
    const renamed = (number: string, second: number, displayName: string): TranscriptRecord => ({
      kind: 'conversation',
      _id: `whatsapp:${number}`,
      channel: 'whatsapp',
      address: `whatsapp:${number}`,
      displayName,
      nameChanged: true,
      at: at(second),
    });
    const nameOf = async (number: string) => (await harness.services.transcripts.conversations.findById(`whatsapp:${number}`).lean())?.displayName;
    await folding.apply([renamed('+447700908511', 70, 'Newer')]);
    // The older rename's entry arrives late (taken over from a writer that died holding it).
    await writer.apply([renamed('+447700908511', 60, 'Older')]);
    expect(await nameOf('+447700908511')).toBe('Newer');
    await folding.apply([renamed('+447700908511', 65, 'Older')]);
    expect(await nameOf('+447700908511')).toBe('Newer');
    // It still keeps the conversation recent, and a newer rename still lands.
    await folding.apply([renamed('+447700908511', 80, 'Newest')]);
    expect(await harness.services.transcripts.conversations.findById('whatsapp:+447700908511').lean()).toMatchObject({
      displayName: 'Newest',
      createdAt: new Date(at(70)),
      updatedAt: new Date(at(80)),
    });
    // In one batch, out of order: the newest name wins, wherever it sits.
    await folding.apply([renamed('+447700908512', 90, 'Bea'), renamed('+447700908512', 85, 'Ada')]);
    expect(await nameOf('+447700908512')).toBe('Bea');
  });

  test('a status in a later batch than its message moves it on; a replayed earlier batch never moves it back', async () => {
    const first = turn('+447700908504', 'SMfold4', 50);
    await folding.apply(first);
    await folding.apply([{ kind: 'status', _id: 'out:whatsapp:SMfold4#0', status: 'read', channelMessageId: 'SMoutSMfold4', at: at(55) }]);
    expect(await stored(['out:whatsapp:SMfold4#0'])).toEqual({ 'out:whatsapp:SMfold4#0': ['read', 'SMoutSMfold4', 'answer SMfold4'] });
    // The first batch again (a writer that died before deleting it): its message is held, so it
    // is not inserted as the batch leaves it (queued) but gets its records' ranked writes.
    await folding.apply(first);
    expect(await stored(['out:whatsapp:SMfold4#0'])).toEqual({ 'out:whatsapp:SMfold4#0': ['read', 'SMoutSMfold4', 'answer SMfold4'] });
    expect(await harness.services.transcripts.messages.countDocuments({ conversationId: 'whatsapp:+447700908504' })).toBe(2);
  });

  test('a batch half written before (a writer killed mid-batch) lands whole: the written part updated, the rest inserted', async () => {
    const batch = [...turn('+447700908505', 'SMfold5', 60), ...turn('+447700908505', 'SMfold6', 70)];
    // The killed writer got as far as the first reply, still pending, and the second inbound message.
    await folding.apply([batch[2] as TranscriptRecord, batch[6] as TranscriptRecord]);
    expect(await stored(['out:whatsapp:SMfold5#0'])).toEqual({ 'out:whatsapp:SMfold5#0': ['pending', null, 'answer SMfold5'] });
    await folding.apply(batch);
    expect(await stored(['in:whatsapp:SMfold5', 'out:whatsapp:SMfold5#0', 'in:whatsapp:SMfold6', 'out:whatsapp:SMfold6#0'])).toEqual({
      'in:whatsapp:SMfold5': ['received', 'SMfold5', 'question SMfold5'],
      'out:whatsapp:SMfold5#0': ['queued', 'SMoutSMfold5', 'answer SMfold5'],
      'in:whatsapp:SMfold6': ['received', 'SMfold6', 'question SMfold6'],
      'out:whatsapp:SMfold6#0': ['queued', 'SMoutSMfold6', 'answer SMfold6'],
    });
    expect(await harness.services.transcripts.messages.countDocuments({ conversationId: 'whatsapp:+447700908505' })).toBe(4);
    expect(await transcriptModels(harness.services.mongo).deliveries.countDocuments({ messageId: /SMfold[56]/ })).toBe(2);
  });

  test('a message MongoDB already holds is written before the message of a later record (an apology never shows before its message failed)', async () => {
    const [, held] = turn('+447700908507', 'SMfold8', 90);
    await folding.apply([held as TranscriptRecord]);
    const apology = 'out:whatsapp:SMfold8#99';
    const [, , reply] = turn('+447700908507', 'SMfold8', 90);
    if (reply?.kind !== 'message') throw new Error('not a message record');
    commands.length = 0;
    // What giving up on a message appends: the message (as it may never have been recorded) and its failure, then the apology.
    await folding.apply([
      held as TranscriptRecord,
      { kind: 'status', _id: 'in:whatsapp:SMfold8', status: 'failed', errorMessage: 'given up on (budget)', at: at(95) },
      { kind: 'message', message: { ...reply.message, _id: apology, part: 99, text: 'Sorry' } },
      { kind: 'status', _id: apology, status: 'queued', channelMessageId: 'SMoutSMfold8', at: at(96) },
    ]);
    // The insert stops at the held message; from there, each record's own writes in one ordered
    // command: the message marked failed before the apology is written. (The conversation was
    // written with the held message: not again.)
    expect(commands).toEqual([`insert messages: in:whatsapp:SMfold8 ${apology}`, `update messages: in:whatsapp:SMfold8 ${apology}`]);
    expect(await stored(['in:whatsapp:SMfold8', apology])).toEqual({
      'in:whatsapp:SMfold8': ['failed', 'SMfold8', 'question SMfold8'],
      [apology]: ['queued', 'SMoutSMfold8', 'Sorry'],
    });
  });

  test('in one batch: a status before its message record, statuses out of order, and a later one of the same rank', async () => {
    const id = 'out:whatsapp:SMfold7#0';
    const [, , reply] = turn('+447700908506', 'SMfold7', 80);
    await folding.apply([
      { kind: 'status', _id: id, status: 'delivered', channelMessageId: 'SMoutSMfold7', at: at(84) },
      reply as TranscriptRecord,
      { kind: 'status', _id: id, status: 'queued', channelMessageId: 'SMoutSMfold7', at: at(82) },
      { kind: 'status', _id: id, status: 'failed', errorCode: '63016', at: at(85) },
      { kind: 'status', _id: id, status: 'undelivered', errorCode: '63024', at: at(86) },
    ]);
    expect(await harness.services.transcripts.messages.findById(id).lean()).toMatchObject({
      text: 'answer SMfold7',
      conversationId: 'whatsapp:+447700908506',
      status: 'undelivered',
      errorCode: '63024',
      channelMessageId: 'SMoutSMfold7',
      createdAt: new Date(at(81)),
      updatedAt: new Date(at(86)),
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
