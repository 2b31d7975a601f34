/**
 * A conversation's messages are published for the live page only while a page watches it: a
 * customer message and the assistant's reply cost no PUBLISH (and no round trip) when nobody
 * does — nearly always — and a page that subscribes gets both from its next message on.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import type { ConversationEvent } from '../../src/handoff/takeover.js';
import { takeoverKeys } from '../../src/handoff/takeover-state.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';

let harness: Harness;
let base: Redis;
let monitor: Redis;
const commands: string[] = [];
beforeAll(async () => {
  harness = await startHarness({});
  base = new Redis(process.env.TEST_REDIS_URL ?? '');
  monitor = await base.monitor();
  monitor.on('monitor', (_time: string, args: string[]) => commands.push(args.join(' ')));
});
afterAll(async () => {
  monitor.disconnect();
  base.disconnect();
  await harness.close();
});

const customer = 'whatsapp:+447700913001';
const publishes = () => commands.filter((command) => command.toLowerCase().startsWith(`publish ${takeoverKeys.events(customer)}`.toLowerCase()));
const answered = (count: number) =>
  eventually(() => (harness.twilio.messages.filter((message) => message.to === customer).length >= count ? true : undefined), 20_000);

describe('live events of a conversation', () => {
  test('nobody watching: the message is answered and nothing is published', async () => {
    await harness.sendWhatsapp({ from: customer, body: 'hello, anyone there?' });
    await answered(1);
    await harness.sendWhatsapp({ from: customer, body: 'and opening hours?' });
    await answered(2);
    expect(commands.some((command) => command.includes(takeoverKeys.watched(customer)))).toBe(true);
    expect(publishes()).toEqual([]);
  });

  test('a page watching gets the next customer message and the reply; once it leaves and its mark expires, nothing again', async () => {
    const events: ConversationEvent[] = [];
    const unsubscribe = await harness.services.takeover.subscribe(customer, (event) => events.push(event));
    await harness.sendWhatsapp({ from: customer, body: 'what do you cost?' });
    await answered(3);
    await eventually(() => (events.some((event) => event.type === 'message' && event.message.author === 'assistant') ? true : undefined));
    expect(events.filter((event) => event.type === 'message').map((event) => (event.type === 'message' ? event.message.author : ''))).toEqual([
      'customer',
      'assistant',
    ]);
    expect(publishes()).toHaveLength(2);
    await unsubscribe();
    // The mark outlives the page by at most WATCHED_TTL_SECONDS (another process may still watch): expired here.
    await harness.services.redis.del(takeoverKeys.watched(customer));
    await harness.sendWhatsapp({ from: customer, body: 'thanks' });
    await answered(4);
    expect(publishes()).toHaveLength(2);
  });
});
