/**
 * The inbox's parts on their own: reading the head (`inbox-head.ts`: order, a takeover entry a
 * batch of its own, a corrupt head refused, the turn state read only when it is this head's) and
 * the head's turn state on the real Redis (`inbox-turn-state.ts`: frozen, running, stopped,
 * given up, started over, failures counted with a doubling delay).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import type { InboundMessage } from '../../src/contracts/index.js';
import { inboundMessage } from './inbound-message.js';
import { createConversationInbox, type ConversationInbox } from '../../src/queue/conversation-inbox.js';
import { CorruptInboxEntryError, headBatch } from '../../src/queue/inbox-head.js';
import { createInboxTurnState } from '../../src/queue/inbox-turn-state.js';

const message = inboundMessage;

describe('the head read', () => {
  const key = 'whatsapp:+447700900001';
  const raws = (...messages: InboundMessage[]) => messages.map((entry) => JSON.stringify(entry));

  test('a batch in arrival order, cut before a takeover entry; the turn state only when it is this head’s', () => {
    const [one, two] = [message(key, 'one'), message(key, 'two')];
    const teammate = message(key, 'from the team', {
      teammate: { action: 'reply', handoffId: 'H1', actor: { id: 'mate', name: 'Mate', via: 'admin' }, teamLabel: 'Sales' },
    });
    const fresh = headBatch(key, 5, raws(one, two, teammate), {});
    expect(fresh?.entries.map((entry) => entry.message.text)).toEqual(['one', 'two']);
    expect(fresh).toMatchObject({ frozen: false, stateless: true, crashes: 0, restarted: false, behind: 1 });

    const frozen = headBatch(key, 5, raws(one, two, teammate), { messageId: one.messageId, size: '1', crashes: '2', given: 'budget' });
    expect(frozen).toMatchObject({ frozen: true, crashes: 2, givenUp: 'budget', behind: 2, stateless: false });
    expect(frozen?.entries).toHaveLength(1);

    // Another head's leftover state says nothing of this one.
    expect(headBatch(key, 5, raws(two), { messageId: one.messageId, size: '3', crashes: '2' })).toMatchObject({ frozen: false, crashes: 0 });
    expect(headBatch(key, 5, [], {})).toBeUndefined();
  });

  test('a corrupt head is refused; a corrupt entry behind it ends the batch', () => {
    expect(() => headBatch(key, 5, ['not json'], {})).toThrow(CorruptInboxEntryError);
    expect(headBatch(key, 5, [...raws(message(key, 'one')), '{"nope":1}', ...raws(message(key, 'three'))], {})?.entries).toHaveLength(1);
  });
});

describe('the head’s turn state', () => {
  let redis: Redis;
  let inbox: ConversationInbox;
  beforeAll(() => {
    redis = new Redis(process.env.TEST_REDIS_URL ?? '');
    inbox = createConversationInbox(redis);
  });
  afterAll(() => redis.quit());

  test('frozen and running, stopped, given up, started over', async () => {
    const key = `whatsapp:+44770090${randomUUID().slice(0, 8)}`;
    const state = createInboxTurnState(redis);
    const first = message(key, 'one');
    await inbox.accept(first);
    await inbox.accept(message(key, 'two'));
    const read = (await inbox.batch(key, 5))!;
    const frozen = await state.freeze(key, read, 'process|token');
    expect(frozen).toMatchObject({ frozen: true, stateless: false });
    await inbox.accept(message(key, 'three'));
    // Frozen: the batch stays the two it started with.
    expect(await inbox.batch(key, 5)).toMatchObject({ frozen: true, running: 'process|token', behind: 1 });

    await state.turnStopped(key, 'another|token');
    expect((await inbox.batch(key, 5))?.running).toBe('process|token');
    await state.turnStopped(key, 'process|token');
    expect((await inbox.batch(key, 5))?.running).toBeUndefined();
    await state.markRunning(key, first.messageId, 'process|again');
    expect((await inbox.batch(key, 5))?.running).toBe('process|again');

    await state.restart(key, first.messageId);
    const restarted = (await inbox.batch(key, 5))!;
    expect(restarted).toMatchObject({ frozen: false, restarted: true });
    expect(restarted.entries).toHaveLength(3);

    await state.markGivenUp(key, 'not-the-head', 'budget');
    expect((await inbox.batch(key, 5))?.givenUp).toBeUndefined();
    await state.markGivenUp(key, first.messageId, 'budget');
    expect((await inbox.batch(key, 5))?.givenUp).toBe('budget');
  });

  test('failures are counted per head, the delay doubling up to its cap', async () => {
    const key = `whatsapp:+44770090${randomUUID().slice(0, 8)}`;
    const state = createInboxTurnState(redis);
    const policy = { firstDelayMs: 100, maxDelayMs: 300 };
    const now = 1_000_000;
    const delays: number[] = [];
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const retry = await state.recordFailure(key, 'SM1', { ...policy, suspect: attempt === 1, now });
      delays.push(retry.nextAttemptAt - now);
      expect(retry).toMatchObject({ attempts: attempt + 1, suspectAttempts: attempt >= 1 ? 1 : 0, firstFailureAt: now });
    }
    expect(delays).toEqual([100, 200, 300]);
    // A new head starts its count afresh.
    expect(await state.recordFailure(key, 'SM2', { ...policy, suspect: false, now })).toMatchObject({ attempts: 1, suspectAttempts: 0 });
  });
});
