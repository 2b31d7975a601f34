/**
 * Where a takeover's end (hand-back or close) lands in a conversation's inbox, on real Redis:
 * right after the teammate's last waiting entry and ahead of the customer messages behind it,
 * so the customer is told the assistant is back before the assistant answers them — but never
 * into the head's batch while a turn may be on it (frozen, or read by the lock's holder), and
 * never ahead of a teammate's message. Dedupe still holds, and a teammate's reply or a customer
 * message is still appended at the tail.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import type { InboundMessage, TeammateEntry } from '../../src/contracts/index.js';
import { createConversationInbox, type ConversationInbox } from '../../src/queue/conversation-inbox.js';
import { holdConversationLock, lockRequest } from '../../src/queue/conversation-lock.js';

let redis: Redis;
let inbox: ConversationInbox;
beforeAll(() => {
  redis = new Redis(process.env.TEST_REDIS_URL ?? '');
  inbox = createConversationInbox(redis);
});
afterAll(() => redis.quit());

const actor = { id: 'whatsapp:+34600914001', name: 'Ana', via: 'whatsapp' as const, whatsapp: 'whatsapp:+34600914001' };

function customer(conversationKey: string, messageId: string): InboundMessage {
  return { channel: 'whatsapp', conversationKey, messageId, from: { address: conversationKey }, text: messageId, receivedAt: Date.now(), metadata: {} };
}

function teammate(conversationKey: string, messageId: string, action: TeammateEntry['action']): InboundMessage {
  return { ...customer(conversationKey, messageId), teammate: { action, handoffId: 'h1', actor, teamLabel: 'Sales team', reason: 'teammate' } };
}

const ids = async (conversationKey: string) =>
  (await redis.lrange(`asst:inbox:{${conversationKey}}`, 0, -1)).map((raw) => (JSON.parse(raw) as InboundMessage).messageId);

/** Reads and acknowledges the head's batch as the worker does (no turn): its message ids. */
async function answerHead(conversationKey: string): Promise<string[]> {
  const batch = await inbox.batch(conversationKey, 5);
  if (!batch) return [];
  await inbox.acknowledge(conversationKey, batch);
  return batch.entries.map((entry) => entry.message.messageId);
}

describe("a takeover's end in the inbox", () => {
  test('goes after the teammate’s last waiting message and ahead of the customer messages behind it; once only', async () => {
    const key = `handback:${randomUUID()}`;
    await inbox.accept(teammate(key, 't1', 'reply'));
    await inbox.accept(customer(key, 'c1'));
    await inbox.accept(teammate(key, 't2', 'reply'));
    await inbox.accept(customer(key, 'c2'));
    await inbox.accept(customer(key, 'c3'));
    // A job was added for t1 and has not tried the lock yet: it reads on, no job of its own.
    expect(await inbox.accept(teammate(key, 'end', 'handed_back'))).toBe('queued');
    expect(await ids(key)).toEqual(['t1', 'c1', 't2', 'end', 'c2', 'c3']);
    // A redelivered hand-back is a duplicate and moves nothing.
    expect(await inbox.accept(teammate(key, 'end', 'handed_back'))).toBe('duplicate');
    // What comes later is appended as always.
    await inbox.accept(customer(key, 'c4'));
    await inbox.accept(teammate(key, 't3', 'reply'));
    expect(await ids(key)).toEqual(['t1', 'c1', 't2', 'end', 'c2', 'c3', 'c4', 't3']);
    // The worker's batches: each teammate entry alone, the customer messages behind the end as one.
    const batches: string[][] = [];
    for (let batch = await answerHead(key); batch.length > 0; batch = await answerHead(key)) batches.push(batch);
    expect(batches).toEqual([['t1'], ['c1'], ['t2'], ['end'], ['c2', 'c3', 'c4'], ['t3']]);
  });

  test('with nothing of the teammate waiting and no turn on the head, it goes first (a close too)', async () => {
    const key = `handback:${randomUUID()}`;
    await inbox.accept(customer(key, 'c1'));
    await inbox.accept(customer(key, 'c2'));
    expect(await inbox.accept(teammate(key, 'end', 'closed'))).toBe('queued');
    expect(await ids(key)).toEqual(['end', 'c1', 'c2']);
    // Into an empty inbox it is simply the inbox; the job is asked for once.
    const empty = `handback:${randomUUID()}`;
    expect(await inbox.accept(teammate(empty, 'end', 'handed_back'))).toBe('appended');
    expect(await inbox.accept(customer(empty, 'c1'))).toBe('queued');
    expect(await ids(empty)).toEqual(['end', 'c1']);
  });

  test('never splits a frozen batch: the turn on it answers the same messages, the end comes right after', async () => {
    const key = `handback:${randomUUID()}`;
    await inbox.accept(customer(key, 'c1'));
    await inbox.accept(customer(key, 'c2'));
    const read = await inbox.batch(key, 5);
    if (!read) throw new Error('no batch');
    const frozen = await inbox.freeze(key, read);
    await inbox.accept(customer(key, 'c3'));
    await inbox.accept(teammate(key, 'end', 'handed_back'));
    expect(await ids(key)).toEqual(['c1', 'c2', 'end', 'c3']);
    const again = await inbox.batch(key, 5);
    expect(again?.frozen).toBe(true);
    expect(again?.entries.map((entry) => entry.message.messageId)).toEqual(['c1', 'c2']);
    await inbox.acknowledge(key, frozen);
    expect(await answerHead(key)).toEqual(['end']);
    expect(await answerHead(key)).toEqual(['c3']);
  });

  test('never changes the head a lock holder has read but not yet frozen: its freeze and acknowledgement still hold', async () => {
    const key = `handback:${randomUUID()}`;
    await inbox.accept(customer(key, 'c1'));
    await inbox.accept(customer(key, 'c2'));
    const request = lockRequest(key, 5000);
    const first = await inbox.lockAndBatch(key, 5, request);
    expect(first.acquired).toBe(true);
    const lock = holdConversationLock(redis, request, () => undefined);
    const read = first.batch();
    if (!read) throw new Error('no batch');
    // Held: no job needed, the holder reads on.
    expect(await inbox.accept(teammate(key, 'end', 'handed_back'))).toBe('held');
    expect(await ids(key)).toEqual(['c1', 'c2', 'end']);
    const frozen = await inbox.freeze(key, read);
    const released = await lock.releaseWith(async (token) => {
      const freed = await inbox.acknowledge(key, frozen, token);
      return { released: freed, value: freed };
    });
    // The end is still waiting: the holder keeps the lock and answers it next.
    expect(released).toBe(false);
    expect(await ids(key)).toEqual(['end']);
    await lock.release();
  });

  test('a holder on a teammate entry: the end goes right behind it, ahead of the customer', async () => {
    const key = `handback:${randomUUID()}`;
    await inbox.accept(teammate(key, 't1', 'reply'));
    await inbox.accept(customer(key, 'c1'));
    const request = lockRequest(key, 5000);
    const first = await inbox.lockAndBatch(key, 5, request);
    const lock = holdConversationLock(redis, request, () => undefined);
    expect(first.batch()?.entries.map((entry) => entry.message.messageId)).toEqual(['t1']);
    await inbox.accept(teammate(key, 'end', 'handed_back'));
    expect(await ids(key)).toEqual(['t1', 'end', 'c1']);
    await lock.release();
  });
});
