/**
 * Crash accounting and quarantine (`turn-quarantine.ts`) on the real Redis: a running mark left
 * by a process without a heartbeat is a death, counted in the head's turn state (the batch is
 * guarded from then on); only a death while the batch ran alone counts against it, and the first
 * such gives it up as `poison`, the decision stored before the give-up handler runs.
 * A mark of this live process is no death.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { ALONE_MARK } from '../../src/queue/turn-deaths.js';
import { accountForDeath } from '../../src/queue/turn-quarantine.js';
import { startStepsRig, type StepsRig } from './steps-rig.js';

let rig: StepsRig;
beforeAll(async () => {
  rig = await startStepsRig();
});
afterAll(() => rig.close());

const fence = () => undefined;

/** Reads the head, marks its turn running as `mark`, and reads it again as the next holder would. */
async function leftRunning(key: string, mark: string) {
  const read = await rig.inbox.batch(key, 1);
  await rig.inbox.freeze(key, read!, mark);
  return (await rig.inbox.batch(key, 1))!;
}

test('a death alone quarantines the batch; deaths beside other turns only guard it', async () => {
  const key = rig.conversation();
  const message = await rig.send(key, 'the message that kills workers');

  // Died beside other turns: counted, guarded, no evidence against it.
  let outcome = await accountForDeath(rig.context, key, await leftRunning(key, 'dead-process-1|token'), fence);
  expect(outcome).toMatchObject({ quarantined: false, batch: { crashes: 1 } });
  expect(outcome.batch.givenUp).toBeUndefined();

  outcome = await accountForDeath(rig.context, key, await leftRunning(key, 'dead-process-2|token'), fence);
  expect(outcome).toMatchObject({ quarantined: false, batch: { crashes: 2 } });
  expect(rig.givenUp).toEqual([]);

  outcome = await accountForDeath(rig.context, key, await leftRunning(key, `dead-process-3|token${ALONE_MARK}`), fence);
  expect(outcome).toMatchObject({ quarantined: true, batch: { crashes: 3, givenUp: 'poison' } });
  expect(rig.givenUp).toHaveLength(1);
  expect(rig.givenUp[0]).toMatchObject({ batch: { message: { messageId: message.messageId }, guarded: true }, failure: { reason: 'poison', attempts: 3 } });
  // The decision is stored: the next holder finishes it rather than answering.
  expect((await rig.inbox.batch(key, 1))?.givenUp).toBe('poison');
  expect(rig.logs.filter((line) => line.event === 'turn-worker-died')).toHaveLength(3);
});

test('a mark of this live process, or none, is no death', async () => {
  const key = rig.conversation();
  await rig.send(key, 'hello');
  const own = await leftRunning(key, rig.context.heartbeat.runningMark('token'));
  expect(await accountForDeath(rig.context, key, own, fence)).toEqual({ batch: own, quarantined: false });

  const fresh = rig.conversation();
  await rig.send(fresh, 'hello');
  const unmarked = (await rig.inbox.batch(fresh, 1))!;
  expect(await accountForDeath(rig.context, fresh, unmarked, fence)).toEqual({ batch: unmarked, quarantined: false });
});
