/**
 * Retries, re-drives, new messages and lost locks against each other, on the real Redis inbox,
 * queue and worker: every accepted message ends answered or apologised for, once.
 *
 * The re-drive race: a message fails in an outage and its re-drive job is due at T; just before
 * T the customer writes again, and that message's job takes the lock, finds the failed head not
 * yet due and leaves it to the re-drive. The re-drive comes due while that job still holds the
 * lock (its release held back 800 ms by a proxy, as a slow network would). A re-drive that found
 * the lock taken used to complete, leaving both messages in the inbox with no job at all.
 *
 * Then a few hundred conversations at once, each driven by its own seed through random
 * interleavings of outages, refusals, new messages and lock expiry.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { setTimeout as sleep } from 'node:timers/promises';
import type { GiveUpHandler, InboundHandler } from '../../src/queue/turn-worker.js';
import { redisKeys } from '../../src/queue/keys.js';
import { eventually } from '../support/harness.js';
import { startDelayingProxy, startQueueRig, type QueueRig } from '../support/queue-rig.js';

const outage = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
/** A request the provider refuses for good (a 400): given up on at once. */
const refusal = () => Object.assign(new Error('invalid request'), { name: 'AI_InvalidPromptError' });

/** The lock's release: EVALSHA <sha> 1 <lock key> <token> (its renewal sends a TTL as well). */
const isLockRelease = (command: string) => /^\*5\r\n\$7\r\nevalsha\r\n\$40\r\n[0-9a-f]{40}\r\n\$1\r\n1\r\n\$\d+\r\nasst:lock:/i.test(command);

let rig: QueueRig | undefined;
let stopProxy: (() => Promise<void>) | undefined;
afterEach(async () => {
  await rig?.close();
  await stopProxy?.();
  rig = undefined;
  stopProxy = undefined;
});

describe('a failed message whose re-drive comes due while a newer message holds the lock', () => {
  test('is answered, with the newer one: the conversation is never left without a job', async () => {
    const proxy = await startDelayingProxy(isLockRelease, 800);
    stopProxy = proxy.close;
    const answered: string[] = [];
    const apologised: string[] = [];
    let failedOnce = false;
    const handle: InboundHandler = async (batch, _signal, assertHeld) => {
      if (!failedOnce) {
        failedOnce = true;
        throw outage();
      }
      assertHeld();
      answered.push(...[...batch.earlier, batch.message].map((message) => message.text));
    };
    const giveUp: GiveUpHandler = async (batch) => {
      apologised.push(...[...batch.earlier, batch.message].map((message) => message.text));
    };
    rig = await startQueueRig({ handle, giveUp, lockRedisUrl: proxy.url, retryBackoffMs: 1500, lockTtlMs: 3000 });
    const key = 'whatsapp:+447700950001';
    await rig.send(key, 'where is my order?');
    const retrying = await eventually(() => rig!.logs.find((line) => line.event === 'inbound-retrying'));
    const dueAt = Date.parse(String(retrying.time)) + Number(retrying.retryInMs);
    // Just before the re-drive is due, the customer writes again.
    await sleep(Math.max(0, dueAt - 300 - Date.now()));
    await rig.send(key, 'hello?');
    await eventually(() => answered.length === 2 || undefined, 15_000);
    expect(answered).toEqual(['where is my order?', 'hello?']);
    expect(apologised).toEqual([]);
    // The window was open: the newer message's job held the lock when the re-drive came due.
    expect(proxy.delayed()).toBeGreaterThanOrEqual(2);
    expect(rig.logs.some((line) => line.event === 'turn-lock-busy-redrive')).toBe(true);
    await eventually(async () => (await rig!.inbox.size(key)) === 0 && (await rig!.pendingJobs()) === 0);
  }, 60_000);
});

/** A small deterministic PRNG (mulberry32), one per seed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SEEDS = 300;

describe.each([
  { coalesceMs: 0, label: 'one turn per message' },
  { coalesceMs: 120, label: 'bursts coalesced' },
])('random interleavings of outages, refusals, new messages and lock expiry ($label)', ({ coalesceMs }) => {
  test(`every accepted message ends answered or apologised for, exactly once (${SEEDS} seeds)`, async () => {
    const rolls = new Map<string, () => number>();
    /** Per message: what reached the customer (the send ledger's view: a message answered is answered). */
    const answered = new Set<string>();
    const apologies = new Set<string>();
    const handle: InboundHandler = async (batch, signal, assertHeld) => {
      const messages = [...batch.earlier, batch.message];
      const { conversationKey } = batch.message;
      // A reply already out is resumed, never redone (as the send ledger does).
      if (!messages.some((message) => answered.has(message.messageId))) {
        const roll = rolls.get(conversationKey)!();
        if (roll < 0.25) throw outage();
        if (roll < 0.3) throw refusal();
        if (roll < 0.4) {
          // The lock expires under the turn (as after a long stall): the worker notices and stops.
          await rig!.redis.del(redisKeys.lock(conversationKey));
          if (!signal.aborted) await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
          throw new Error('turn cut short');
        }
        await sleep(roll * 20);
      }
      assertHeld();
      for (const message of messages) answered.add(message.messageId);
    };
    const giveUp: GiveUpHandler = async (batch, _failure, assertHeld) => {
      assertHeld();
      // The apology goes through the send ledger too: once per message however often it is given up on.
      for (const message of [...batch.earlier, batch.message]) apologies.add(message.messageId);
    };
    // Lock releases held back a little, as on a busy network: holders overlap re-drives coming due.
    const proxy = await startDelayingProxy(isLockRelease, 60);
    stopProxy = proxy.close;
    rig = await startQueueRig({
      handle,
      giveUp,
      coalesceMs,
      lockRedisUrl: proxy.url,
      retryBackoffMs: 40,
      retryBudgetMs: 1200,
      lockTtlMs: 900,
      concurrency: 24,
    });
    const sent = new Map<string, string[]>();
    await Promise.all(
      Array.from({ length: SEEDS }, async (_, seed) => {
        const conversationKey = `whatsapp:+4477009${String(seed).padStart(5, '0')}-${coalesceMs}`;
        const roll = random(seed * 7919 + coalesceMs);
        rolls.set(conversationKey, roll);
        const ids: string[] = [];
        sent.set(conversationKey, ids);
        const count = 1 + Math.floor(roll() * 4);
        for (let index = 0; index < count; index += 1) {
          await sleep(Math.floor(roll() * 400));
          ids.push(await rig!.send(conversationKey, `message ${index} of seed ${seed}`));
        }
      }),
    );
    const all = [...sent.values()].flat();
    await eventually(() => all.every((id) => answered.has(id) || apologies.has(id)) || undefined, 90_000).catch((error: unknown) => {
      const stranded = [...sent.entries()].filter(([, ids]) => ids.some((id) => !answered.has(id) && !apologies.has(id))).map(([key]) => key);
      throw new Error(
        `${stranded.length} conversations have messages neither answered nor apologised for (e.g. ${stranded.slice(0, 3).join(', ')}): ${String(error)}`,
      );
    });
    expect(all.filter((id) => answered.has(id) && apologies.has(id))).toEqual([]);
    // No worker died here: a holder that only lost its lock (alive, cutting its turn short) is never taken for a crash.
    expect(rig.logs.filter((line) => line.event === 'turn-worker-died')).toEqual([]);
    // Nothing left behind: every inbox empty, no job pending.
    await eventually(async () => {
      for (const key of sent.keys()) if ((await rig!.inbox.size(key)) > 0) return undefined;
      return (await rig!.pendingJobs()) === 0 || undefined;
    }, 30_000);
  }, 180_000);
});
