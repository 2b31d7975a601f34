/**
 * What the satisfaction question costs a customer's message in Redis, counted on Redis's MONITOR
 * for this suite's own conversation (other suites share the server): off (CSAT_ENABLED unset),
 * nothing; on, its state noted with the customer's batch (one script: HSET, PEXPIRE, HMGET), the
 * reply's time (HSET, PEXPIRE) and the quiet check (one ZADD) — no queue job, no MULTI.
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

/** One customer message answered: the commands (a script's own included) on its CSAT keys. */
async function csatCommandsOfOneMessage(env: Record<string, string>, customer: string): Promise<string[]> {
  harness = await startHarness({ env });
  monitor = await openMonitor(process.env.TEST_REDIS_URL!);
  const conversation = `{${customer}}`;
  const seen: string[] = [];
  monitor.on('monitor', (_time: string, args: string[]) => {
    const [name = '', ...rest] = args;
    const ours = rest.some((arg) => arg.startsWith('asst:csat:') && arg.includes(conversation)) || (rest[0] === 'asst:{csat}:quiet' && rest.includes(customer));
    if (!ours) return;
    // A script's first run here: EVALSHA answered NOSCRIPT, then EVAL — one call of it.
    if (name.toLowerCase() === 'eval' && seen.at(-1) === 'evalsha') return;
    seen.push(name.toLowerCase());
  });
  await harness.sendWhatsapp({ from: customer, body: 'What time do you open on Saturday?' });
  await eventually(() => harness?.twilio.messages.find((message) => message.to === customer));
  // The reply's note and the quiet check follow the send: waited for when they are expected.
  if (env.CSAT_ENABLED === 'true') await eventually(() => seen.includes('zadd') || undefined);
  // And a moment for anything else the turn would still do.
  await new Promise((resolve) => setTimeout(resolve, 300));
  monitor.disconnect();
  monitor = undefined;
  await harness.close();
  harness = undefined;
  return seen;
}

describe('the satisfaction question in Redis, per customer message', () => {
  test('off: no command', async () => {
    expect(await csatCommandsOfOneMessage({}, 'whatsapp:+447700916001')).toEqual([]);
  });

  test('on: 7 commands — the customer noted in one script, the reply in two commands, the quiet check in one ZADD', async () => {
    const commands = await csatCommandsOfOneMessage({ CSAT_ENABLED: 'true', CSAT_AFTER_MINUTES: '60' }, 'whatsapp:+447700916002');
    expect(commands.sort()).toEqual(['evalsha', 'hmget', 'hset', 'hset', 'pexpire', 'pexpire', 'zadd']);
  });
});
