/**
 * The intake ledger's cross-offs on the real Redis: a message's note is crossed off once its job
 * exists, with the other cross-offs of its shard in one ZREM (counted on Redis's MONITOR, this
 * suite's own keys only), and a note whose job was never added stays for the sweeper.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import type { InboundMessage } from '../../src/contracts/index.js';
import { createConversationInbox } from '../../src/queue/conversation-inbox.js';
import { createIntakeLedger } from '../../src/queue/intake-ledger.js';
import type { TurnQueue } from '../../src/queue/turn-queue.js';
import { createIntake } from '../../src/turn/intake.js';
import { eventually } from '../support/harness.js';
import { openMonitor } from '../support/orchestrator-fixture.js';

let redis: Redis;
let monitor: Redis | undefined;
beforeAll(() => {
  redis = new Redis(process.env.TEST_REDIS_URL!);
});
afterAll(async () => {
  monitor?.disconnect();
  await redis.quit();
});

const message = (conversationKey: string, messageId: string): InboundMessage => ({
  channel: 'whatsapp',
  conversationKey,
  messageId,
  from: { address: conversationKey },
  text: 'hello',
  receivedAt: Date.now(),
  metadata: {},
});

test('twenty messages answered at once: their notes crossed off with their shards, fewer ZREMs than messages, none left', async () => {
  const prefix = `{intake-test-${randomUUID()}}`;
  const ledger = createIntakeLedger(redis, prefix);
  const added: string[] = [];
  const queue = { add: async (_name: string, job: { messageId: string }) => void added.push(job.messageId) } as unknown as TurnQueue;
  const intake = createIntake(createConversationInbox(redis), queue, ledger);
  const ours = prefix.replace(/[{}]/g, '');
  const zrems: string[][] = [];
  monitor = await openMonitor(process.env.TEST_REDIS_URL!);
  monitor.on('monitor', (_time: string, args: string[]) => {
    const [name = '', key = '', ...members] = args;
    if (name.toLowerCase() === 'zrem' && key.includes(ours)) zrems.push(members);
  });
  const run = randomUUID();
  const conversations = Array.from({ length: 20 }, (_, index) => `intake-test:${run}:${index}`);
  await Promise.all(conversations.map((conversationKey) => intake.accept(message(conversationKey, `m-${conversationKey}`))));
  await eventually(() => added.length === 20 || undefined);
  // Every note is crossed off (no sweeper would add a job)…
  await eventually(async () => ((await ledger.stale(Date.now() + 1)).length === 0 ? true : undefined));
  await eventually(() => zrems.flat().length === 20 || undefined);
  // …in fewer commands than messages: a shard's cross-offs went together.
  expect(zrems.length).toBeLessThan(20);
  expect(new Set(zrems.flat()).size).toBe(20);
});

test('a note whose job was never added is not crossed off; a close sends the cross-offs still waiting', async () => {
  const prefix = `{intake-test-${randomUUID()}}`;
  const ledger = createIntakeLedger(redis, prefix);
  const failing = { add: async () => Promise.reject(new Error('Redis refused the job (test)')) } as unknown as TurnQueue;
  const conversationKey = `intake-test:${randomUUID()}`;
  await expect(createIntake(createConversationInbox(redis), failing, ledger).accept(message(conversationKey, 'kept'))).resolves.toBe('accepted');
  await ledger.note({ conversationKey, messageId: 'waiting' });
  ledger.clearSoon({ conversationKey, messageId: 'waiting' });
  await ledger.flush();
  const left = (await ledger.stale(Date.now() + 1)).map((note) => note.messageId);
  expect(left).toEqual(['kept']);
});
