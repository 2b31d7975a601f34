/**
 * The inbox's intake on the real Redis (`acceptScript`): the message that creates a
 * conversation's inbox sets its TTL, the messages appended behind it cost no EXPIRE (counted on
 * Redis's MONITOR, this suite's own inbox keys only), and the inbox never stands without a TTL:
 * not behind waiting messages, not once an acknowledgement left some in it, not after a takeover's
 * end rewrote it, and an acknowledgement that empties it lets the next message start a new one.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import { inboundMessage } from './inbound-message.js';
import { createConversationInbox, type ConversationInbox } from '../../src/queue/conversation-inbox.js';
import { INBOX_TTL_SECONDS, redisKeys } from '../../src/queue/keys.js';
import { eventually } from '../support/harness.js';
import { openMonitor } from '../support/orchestrator-fixture.js';

let redis: Redis;
let monitor: Redis;
let inbox: ConversationInbox;
/** Commands Redis ran on this suite's inbox keys, as `<lua |>name key`. */
const seen: string[] = [];
const marks = new Set<string>();
beforeAll(async () => {
  redis = new Redis(process.env.TEST_REDIS_URL ?? '');
  inbox = createConversationInbox(redis);
  monitor = await openMonitor(process.env.TEST_REDIS_URL ?? '');
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    const [name = '', key = ''] = args;
    if (name.toLowerCase() === 'echo') marks.add(key);
    if (key.startsWith('asst:inbox:{inbox-accept-test:')) seen.push(`${source === 'lua' ? 'lua ' : ''}${name.toLowerCase()}`);
  });
});
afterAll(async () => {
  monitor.disconnect();
  await redis.quit();
});

/** The commands on our inbox keys since the last call (everything sent before it has been seen). */
async function commandsSince(): Promise<string[]> {
  const mark = `mark:${randomUUID()}`;
  await redis.echo(mark);
  await eventually(() => marks.has(mark) || undefined);
  return seen.splice(0);
}

const message = inboundMessage;

const ttlOf = (conversationKey: string) => redis.ttl(redisKeys.inbox(conversationKey));

test('the message that creates the inbox sets its TTL; the three behind it append without an EXPIRE each', async () => {
  const conversation = `inbox-accept-test:${randomUUID()}`;
  await commandsSince();
  expect(await inbox.accept(message(conversation, 'one'))).toBe('appended');
  expect(await commandsSince()).toEqual(['lua rpush', 'lua expire']);
  for (const text of ['two', 'three', 'four']) expect(await inbox.accept(message(conversation, text))).toBe('queued');
  expect(await commandsSince()).toEqual(['lua rpush', 'lua rpush', 'lua rpush']);
  expect(await inbox.size(conversation)).toBe(4);
  const ttl = await ttlOf(conversation);
  expect(ttl).toBeGreaterThan(0);
  expect(ttl).toBeLessThanOrEqual(INBOX_TTL_SECONDS);
});

test('never without a TTL: behind an acknowledged batch, after a takeover’s end rewrote it, and anew once an acknowledgement emptied it', async () => {
  const conversation = `inbox-accept-test:${randomUUID()}`;
  for (const text of ['one', 'two', 'three']) await inbox.accept(message(conversation, text));
  // The TTL a previous message set, made short so a renewal would show.
  await redis.expire(redisKeys.inbox(conversation), 1000);

  // The head answered, two left: still the TTL the creating message set (no renewal, none lost).
  const head = await inbox.batch(conversation, 1);
  await inbox.acknowledge(conversation, head!);
  expect(await inbox.size(conversation)).toBe(2);
  expect(await ttlOf(conversation)).toBeGreaterThan(0);
  expect(await ttlOf(conversation)).toBeLessThanOrEqual(1000);

  // A takeover's end goes ahead of them and sets the TTL again.
  const end = message(conversation, '', {
    teammate: { action: 'handed_back', handoffId: 'H1', actor: { id: 'mate', name: 'Mate', via: 'admin' }, teamLabel: 'Sales' },
  });
  await inbox.accept(end);
  expect(await inbox.size(conversation)).toBe(3);
  expect(await ttlOf(conversation)).toBeGreaterThan(1000);

  // Everything answered: the inbox is gone, and the next message starts a new one with its TTL.
  const rest = await inbox.batch(conversation, 1);
  await inbox.acknowledge(conversation, rest!);
  const last = await inbox.batch(conversation, 5);
  await inbox.acknowledge(conversation, last!);
  expect(await inbox.size(conversation)).toBe(0);
  await inbox.unmarkQueued(conversation);
  expect(await inbox.accept(message(conversation, 'a new day'))).toBe('appended');
  expect(await ttlOf(conversation)).toBeGreaterThan(1000);
  expect(await ttlOf(conversation)).toBeLessThanOrEqual(INBOX_TTL_SECONDS);
});
