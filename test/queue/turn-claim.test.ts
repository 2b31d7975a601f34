/**
 * Claiming a conversation (`turn-claim.ts`) on the real Redis: the lock and the head's first
 * read in one round trip; a conversation another holds is left to it (no claim) until its lock
 * goes; the claim's fence (`assertHeld`) holds while the lock does.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { claimConversation } from '../../src/queue/turn-claim.js';
import { startStepsRig, type StepsRig } from './steps-rig.js';

let rig: StepsRig;
beforeAll(async () => {
  rig = await startStepsRig();
});
afterAll(() => rig.close());

test('takes the lock and reads the head with it; a second claim finds it busy until the first lets go', async () => {
  const key = rig.conversation();
  const first = await rig.send(key, 'hello');
  await rig.send(key, 'are you there?');

  const claim = await claimConversation(rig.context, key);
  expect(claim).toBeDefined();
  // One turn per message here (no channel coalesces): the head alone.
  expect(claim!.first()?.entries.map((entry) => entry.message.messageId)).toEqual([first.messageId]);
  expect(claim!.lock.held).toBe(true);
  expect(() => claim!.assertHeld()).not.toThrow();
  expect(claim!.abort.signal.aborted).toBe(false);

  expect(await claimConversation(rig.context, key)).toBeUndefined();
  claim!.unwatch();
  await claim!.lock.release();

  const again = await claimConversation(rig.context, key);
  expect(again).toBeDefined();
  again!.unwatch();
  await again!.lock.release();
});

test('an empty inbox is claimed with nothing to read', async () => {
  const claim = await claimConversation(rig.context, rig.conversation());
  expect(claim?.first()).toBeUndefined();
  claim!.unwatch();
  await claim!.lock.release();
});

test('a claim on a coalescing worker reads the whole burst', async () => {
  const coalescing = await startStepsRig({ coalesceMs: 500 });
  try {
    const key = coalescing.conversation();
    for (const text of ['one', 'two', 'three']) await coalescing.send(key, text);
    const claim = await claimConversation(coalescing.context, key);
    expect(claim?.first()?.entries.map((entry) => entry.message.text)).toEqual(['one', 'two', 'three']);
    claim!.unwatch();
    await claim!.lock.release();
  } finally {
    await coalescing.close();
  }
});
