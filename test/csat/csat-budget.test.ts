/**
 * What the satisfaction question costs a customer's message in Redis, counted on Redis's MONITOR
 * for this suite's own conversation (other suites share the server): off (CSAT_ENABLED unset),
 * nothing; on, its state noted with the customer's batch (HSET, HMGET in one round trip), the
 * reply's time (HSET) and the quiet check (one ZADD) — no script, no queue job, no MULTI; the
 * hash's TTL (PEXPIRE) only where a write created it, not on every message.
 */
import { afterAll, describe, expect, test } from '@jest/globals';
import type { Redis } from 'ioredis';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { openMonitor } from '../support/orchestrator-fixture.js';

let harness: Harness | undefined;
let monitor: Redis | undefined;
afterAll(async () => {
  monitor?.disconnect();
  await harness?.close();
});

/** Customer messages answered one after another: per message, the commands (a script's own included) on its CSAT keys. */
async function csatCommandsPerMessage(env: Record<string, string>, customer: string, bodies: readonly string[]): Promise<string[][]> {
  harness = await startHarness({ env });
  monitor = await openMonitor(process.env.TEST_REDIS_URL!);
  const conversation = `{${customer}}`;
  const perMessage: string[][] = [];
  let seen: string[] = [];
  monitor.on('monitor', (_time: string, args: string[]) => {
    const [name = '', ...rest] = args;
    const ours = rest.some((arg) => arg.startsWith('asst:csat:') && arg.includes(conversation)) || (rest[0] === 'asst:{csat}:quiet' && rest.includes(customer));
    if (!ours) return;
    // A script's first run here: EVALSHA answered NOSCRIPT, then EVAL — one call of it.
    if (name.toLowerCase() === 'eval' && seen.at(-1) === 'evalsha') return;
    seen.push(name.toLowerCase());
  });
  for (const [index, body] of bodies.entries()) {
    seen = [];
    perMessage.push(seen);
    await harness.sendWhatsapp({ from: customer, body });
    await eventually(() => (harness?.twilio.messages.filter((message) => message.to === customer).length ?? 0) > index || undefined);
    // The reply's note and the quiet check follow the send: waited for when they are expected.
    if (env.CSAT_ENABLED === 'true') await eventually(() => seen.includes('zadd') || undefined);
    // And a moment for anything else the turn would still do.
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  monitor.disconnect();
  monitor = undefined;
  await harness.close();
  harness = undefined;
  return perMessage;
}

describe('the satisfaction question in Redis, per customer message', () => {
  test('off: no command', async () => {
    expect(await csatCommandsPerMessage({}, 'whatsapp:+447700916001', ['What time do you open on Saturday?'])).toEqual([[]]);
  });

  test('on: the customer noted in two commands, the reply in one HSET, the quiet check in one ZADD; the TTL set where a write created the state', async () => {
    const [first, second] = await csatCommandsPerMessage({ CSAT_ENABLED: 'true', CSAT_AFTER_MINUTES: '60' }, 'whatsapp:+447700916002', [
      'What time do you open on Saturday?',
      'And on Sunday?',
    ]);
    // The conversation's first message creates the state, and its first reply the reply's fields: each sets the TTL.
    expect(first?.sort()).toEqual(['hmget', 'hset', 'hset', 'pexpire', 'pexpire', 'zadd']);
    // Every later one: 4 commands, no TTL (set at most once a day per process).
    expect(second?.sort()).toEqual(['hmget', 'hset', 'hset', 'zadd']);
  });
});
