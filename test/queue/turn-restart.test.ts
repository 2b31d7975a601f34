/**
 * Coalescing and restarting (`turn-restart.ts`) on the real Redis: a channel that coalesces
 * nothing answers the head alone; a fresh batch on one that does starts at once, unless the
 * customer is typing or the turn follows a restart (then it waits for the quiet period, or for a
 * full batch); a restart unfreezes the batch, clears its running mark and marks it restarted.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { MAX_BATCH_MESSAGES } from '../../src/queue/conversation-inbox.js';
import { claimConversation, type DrainState } from '../../src/queue/turn-claim.js';
import { restartTurn, whenTurnStarts } from '../../src/queue/turn-restart.js';
import { startStepsRig, type StepsRig } from './steps-rig.js';

const QUIET_MS = 2000;
let rig: StepsRig;
beforeAll(async () => {
  rig = await startStepsRig({ coalesceMs: QUIET_MS, channelCoalesceMs: { cli: 0 } });
});
afterAll(() => rig.close());

test('a channel that coalesces nothing answers the head alone', async () => {
  const key = rig.conversation();
  await rig.send(key, 'one', Date.now(), 'cli');
  await rig.send(key, 'two', Date.now(), 'cli');
  // The worker reads up to a full batch: another channel coalesces.
  const read = (await rig.inbox.batch(key, MAX_BATCH_MESSAGES))!;
  expect(read.entries).toHaveLength(2);
  const start = whenTurnStarts(rig.context, key, read);
  expect(start.coalescing).toBe(false);
  expect(start.quietAt).toBeUndefined();
  expect(start.batch.entries.map((entry) => entry.message.text)).toEqual(['one']);
  expect(start.batch.behind).toBe(read.behind + 1);
});

test('a fresh burst starts at once; after a restart it waits for the quiet period or a full batch', async () => {
  const key = rig.conversation();
  const newest = Date.now() - 500;
  await rig.send(key, 'one', newest - 100);
  await rig.send(key, 'two', newest);
  const read = (await rig.inbox.batch(key, MAX_BATCH_MESSAGES))!;
  expect(whenTurnStarts(rig.context, key, read)).toEqual({ batch: read, coalescing: true });

  const restarted = { ...read, restarted: true };
  expect(whenTurnStarts(rig.context, key, restarted).quietAt).toBe(newest + QUIET_MS);

  for (const text of ['three', 'four', 'five']) await rig.send(key, text, newest);
  const full = (await rig.inbox.batch(key, MAX_BATCH_MESSAGES))!;
  expect(full.entries).toHaveLength(MAX_BATCH_MESSAGES);
  expect(whenTurnStarts(rig.context, key, { ...full, restarted: true }).quietAt).toBeUndefined();
});

test('a customer typing after the newest message holds the turn a little', async () => {
  const key = rig.conversation();
  await rig.send(key, 'hang on', Date.now() - 1000);
  await rig.inbox.reportTyping(key, QUIET_MS);
  const read = (await rig.inbox.batch(key, MAX_BATCH_MESSAGES))!;
  expect(read.typingAt).toBeDefined();
  const before = Date.now();
  const start = whenTurnStarts(rig.context, key, read);
  expect(start.quietAt).toBeGreaterThan(before);
  expect(start.quietAt! - before).toBeLessThanOrEqual(QUIET_MS);
  expect(rig.logs.some((line) => line.event === 'turn-coalescing' && line.typing === true)).toBe(true);
});

test('a restart unfreezes the batch, clears its running mark and marks it restarted', async () => {
  const key = rig.conversation();
  await rig.send(key, 'one');
  const claim = (await claimConversation(rig.context, key))!;
  let ended = 0;
  const drain: DrainState = {
    ...claim,
    running: 'mark',
    admission: { admit: async () => undefined, ended: () => (ended += 1), release: async () => undefined },
  };
  try {
    const frozen = await rig.inbox.freeze(key, claim.first()!, rig.context.heartbeat.runningMark(claim.token));
    expect((await rig.inbox.batch(key, MAX_BATCH_MESSAGES))?.running).toBeDefined();
    await rig.send(key, 'two');
    await restartTurn(rig.context, drain, frozen);
    expect(drain.running).toBeUndefined();
    expect(ended).toBe(1);
    const again = (await rig.inbox.batch(key, MAX_BATCH_MESSAGES))!;
    expect(again).toMatchObject({ frozen: false, restarted: true });
    expect(again.running).toBeUndefined();
    expect(again.entries.map((entry) => entry.message.text)).toEqual(['one', 'two']);
    expect(rig.logs.some((line) => line.event === 'turn-restarted' && line.conversationKey === key)).toBe(true);
  } finally {
    claim.unwatch();
    await claim.lock.release();
  }
});
