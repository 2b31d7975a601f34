/**
 * A failed turn (`turn-retry.ts`) on the real Redis and queue: an outage is counted in the head's
 * turn state and its next attempt scheduled as a delayed re-drive job (one per attempt, however
 * often it is ensured); a holding message due before that attempt goes out at once; a failure
 * the same message would meet again is given up on at once, the decision stored first; an unknown one
 * after MAX_SUSPECT_ATTEMPTS. A holding job still waiting on its failure sends its message, once
 * per wait.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { MAX_SUSPECT_ATTEMPTS, onFailure, waitForRetry } from '../../src/queue/turn-retry.js';
import { startStepsRig, type StepsRig } from './steps-rig.js';

const outage = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
/** A failure the same message meets again (here, a schema it does not pass). */
const refusal = () => Object.assign(new Error('invalid'), { name: 'ZodError' });
const fence = () => undefined;

let rig: StepsRig;
beforeAll(async () => {
  rig = await startStepsRig();
});
afterAll(() => rig.close());

test('an outage schedules a re-drive job and sends the holding message due now', async () => {
  const key = rig.conversation();
  const message = await rig.send(key, 'where is my order?');
  const batch = await rig.inbox.freeze(key, (await rig.inbox.batch(key, 1))!);
  const outcome = await onFailure(rig.context, key, batch, outage(), fence);
  expect(outcome).toMatchObject({ kind: 'waiting' });
  if (typeof outcome === 'string' || outcome.kind !== 'waiting') throw new Error('not waiting');
  const job = await rig.queue.getJob(outcome.redriveId);
  expect(job?.name).toBe('redrive');
  expect(job?.data).toEqual({ conversationKey: key, messageId: message.messageId });
  expect(await job?.isDelayed()).toBe(true);
  // The rig's holding notice is due as soon as the wait starts: sent now, once.
  expect(rig.held.map((held) => held.message.messageId)).toEqual([message.messageId]);
  const read = await rig.inbox.batch(key, 1);
  expect(read?.retry).toMatchObject({ attempts: 1, suspectAttempts: 0, nextAttemptAt: outcome.at });
  expect(rig.logs.some((line) => line.event === 'inbound-retrying' && line.kind === 'infrastructure')).toBe(true);

  // Found again before it is due: left to the same re-drive job; a holding job of that attempt sends nothing more (the wait had it).
  const again = await waitForRetry(rig.context, key, { ...read!, retry: read!.retry! }, { messageId: message.messageId, attempt: 1 }, fence);
  expect(again).toEqual(outcome);
  expect(rig.held).toHaveLength(1);
  expect(await rig.queue.getDelayedCount()).toBe(1);
});

test('a refusal is given up on at once, the decision stored first', async () => {
  const key = rig.conversation();
  const message = await rig.send(key, 'something the provider refuses');
  const batch = (await rig.inbox.batch(key, 1))!;
  expect(await onFailure(rig.context, key, batch, refusal(), fence)).toBe('deterministic');
  expect(rig.givenUp.at(-1)).toMatchObject({ batch: { message: { messageId: message.messageId } }, failure: { reason: 'deterministic', attempts: 1 } });
  expect((await rig.inbox.batch(key, 1))?.givenUp).toBe('deterministic');
});

test('an unknown failure is retried, then given up on after MAX_SUSPECT_ATTEMPTS', async () => {
  const key = rig.conversation();
  await rig.send(key, 'a message a bug chokes on');
  const outcomes: unknown[] = [];
  for (let attempt = 1; attempt <= MAX_SUSPECT_ATTEMPTS; attempt += 1) {
    const batch = (await rig.inbox.batch(key, 1))!;
    const outcome = await onFailure(rig.context, key, batch, new Error('undefined is not a function'), fence);
    outcomes.push(typeof outcome === 'string' ? outcome : outcome.kind);
  }
  expect(outcomes).toEqual([...Array.from({ length: MAX_SUSPECT_ATTEMPTS - 1 }, () => 'waiting'), 'unknown']);
  expect(rig.givenUp.at(-1)?.failure).toMatchObject({ reason: 'unknown', attempts: MAX_SUSPECT_ATTEMPTS });
});
