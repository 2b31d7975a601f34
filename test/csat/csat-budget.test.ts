/**
 * What the satisfaction question costs a customer's message in Redis, counted on Redis's MONITOR
 * for this suite's own conversation (other suites share the server): off (CSAT_ENABLED unset),
 * nothing; on, nothing of its own on a message that changes nothing — it reads the conversation's
 * hash by joining the turn's open (the turn's own commands on that hash are the same as with it
 * off), writes its fields there only when they changed (where the customer writes from and in
 * which language on the first message, the role that answered on the first reply) and queues the
 * conversation's quiet check once (one ZADD), not on every reply: that check finds a later reply
 * and comes again after it.
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

interface MessageCommands {
  /** The satisfaction question's own: on its hash, the quiet set, its fields in the conversation's hash. */
  csat: string[];
  /** Every command on the conversation's hash (a script's own included): the turn's, the question's, a background sweep's. */
  conversation: string[];
}

/** Customer messages answered one after another: per message, the commands on its keys. */
async function commandsPerMessage(env: Record<string, string>, customer: string, bodies: readonly string[]): Promise<MessageCommands[]> {
  harness = await startHarness({ env });
  monitor = await openMonitor(process.env.TEST_REDIS_URL!);
  const conversationHash = `asst:tx:conv:{${customer}}`;
  const perMessage: MessageCommands[] = [];
  let seen: MessageCommands = { csat: [], conversation: [] };
  monitor.on('monitor', (_time: string, args: string[]) => {
    const [command = '', ...rest] = args;
    const name = command.toLowerCase();
    // A script always goes as EVALSHA first (then EVAL, where Redis answered NOSCRIPT): one call of it.
    if (name === 'eval') return;
    const onConversation = rest.includes(conversationHash);
    const own =
      rest.some((arg) => arg === `asst:csat:{${customer}}`) ||
      (rest[0] === 'asst:{csat}:quiet' && rest.includes(customer)) ||
      (onConversation && rest.some((arg) => arg.startsWith('csat:')));
    if (own) seen.csat.push(name);
    if (onConversation) seen.conversation.push(name);
  });
  for (const [index, body] of bodies.entries()) {
    seen = { csat: [], conversation: [] };
    perMessage.push(seen);
    await harness.sendWhatsapp({ from: customer, body });
    await eventually(() => (harness?.twilio.messages.filter((message) => message.to === customer).length ?? 0) > index || undefined);
    // The turn's finish (the reply's note, the quiet check) is done before its batch is acknowledged.
    await eventually(async () => ((await harness?.services.redis.exists(`asst:inbox:{${customer}}`)) === 0 ? true : undefined));
    // And a moment for anything else the turn would still do.
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  monitor.disconnect();
  monitor = undefined;
  await harness.close();
  harness = undefined;
  return perMessage;
}

const BODIES = ['What time do you open on Saturday?', 'And on Sunday?', 'And on Monday?'];

describe('the satisfaction question in Redis, per customer message', () => {
  let off: MessageCommands[] = [];

  test('off: no command', async () => {
    off = await commandsPerMessage({}, 'whatsapp:+447700916001', BODIES);
    expect(off.map((message) => message.csat)).toEqual([[], [], []]);
  });

  test('on: its fields written once where the first message and reply set them, the quiet check queued once; later messages cost nothing', async () => {
    const on = await commandsPerMessage({ CSAT_ENABLED: 'true', CSAT_AFTER_MINUTES: '60' }, 'whatsapp:+447700916002', BODIES);
    // The first message: where the customer writes from and their language (one HSET); the first
    // reply: the role that answered (one HSET) and the quiet check (one ZADD).
    expect(on[0]?.csat.sort()).toEqual(['hset', 'hset', 'zadd']);
    // Every later one: nothing changed, and the check queued is still to come.
    expect(on.slice(1).map((message) => message.csat)).toEqual([[], []]);
    // The conversation's hash is read once a message, as with the question off: by the turn's open, whose read the question joins.
    const reads = (messages: MessageCommands[]) => messages.map((message) => message.conversation.filter((name) => name === 'hgetall'));
    expect(reads(off)).toEqual([['hgetall'], ['hgetall'], ['hgetall']]);
    expect(reads(on)).toEqual(reads(off));
  });
});
