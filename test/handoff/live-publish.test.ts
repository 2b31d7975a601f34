/**
 * A conversation's messages are published for the live page only while a page watches it: a
 * customer message and the assistant's reply cost no PUBLISH (and no round trip) when nobody
 * does — nearly always — and a page that subscribes gets both from its next message on. What is
 * published is watched on the conversation's channel by a plain subscriber (which marks nothing).
 * Whether a page watches is read with the takeover, in one command a batch (counted on Redis's
 * MONITOR, this suite's conversation keys only).
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import type { ConversationEvent } from '../../src/takeover/takeover.js';
import { takeoverKeys, WATCHED_TTL_SECONDS } from '../../src/takeover/takeover-state.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { openMonitor } from '../support/orchestrator-fixture.js';
import { turnsSettled } from '../support/settled.js';

const customer = 'whatsapp:+447700913901';
const channel = takeoverKeys.events(customer);
const MARK = 'mark';

let harness: Harness;
let listener: Redis;
const published: string[] = [];
beforeAll(async () => {
  harness = await startHarness({});
  listener = new Redis(process.env.TEST_REDIS_URL ?? '');
  listener.on('message', (_from: string, message: string) => published.push(message));
  await listener.subscribe(channel);
});
afterAll(async () => {
  listener.disconnect();
  await harness.close();
});

const answered = (count: number) =>
  eventually(() => (harness.twilio.messages.filter((message) => message.to === customer).length >= count ? true : undefined), 20_000);
/** What was published once the turns ended (a mark of our own, published last, arrives after everything before it). */
const publications = async () => {
  await turnsSettled(harness.services);
  const marks = published.filter((message) => message === MARK).length;
  await harness.services.redis.publish(channel, MARK);
  await eventually(() => (published.filter((message) => message === MARK).length > marks ? true : undefined));
  return published.filter((message) => message !== MARK).map((message) => (JSON.parse(message) as ConversationEvent).type);
};

describe('live events of a conversation', () => {
  test('nobody watching: the messages are answered and nothing is published', async () => {
    await harness.sendWhatsapp({ from: customer, body: 'hello, anyone there?' });
    await answered(1);
    await harness.sendWhatsapp({ from: customer, body: 'and opening hours?' });
    await answered(2);
    expect(await publications()).toEqual([]);
  });

  test('a page watching gets the next customer message and the reply; once it leaves and its mark expires, nothing again', async () => {
    const events: ConversationEvent[] = [];
    const unsubscribe = await harness.services.takeover.subscribe(customer, (event) => events.push(event));
    await harness.sendWhatsapp({ from: customer, body: 'what do you cost?' });
    await answered(3);
    await eventually(() => (events.some((event) => event.type === 'message' && event.message.author === 'assistant') ? true : undefined));
    expect(events.map((event) => (event.type === 'message' ? event.message.author : event.type))).toEqual(['customer', 'assistant']);
    expect(await publications()).toEqual(['message', 'message']);
    // The previous release's mark is set too (its workers publish to this page during a deploy), for as long.
    expect(await harness.services.redis.ttl(takeoverKeys.watched(customer))).toBeGreaterThan(0);
    expect(await harness.services.redis.ttl(takeoverKeys.watched(customer))).toBeLessThanOrEqual(WATCHED_TTL_SECONDS);
    await unsubscribe();
    // The mark outlives the page by at most WATCHED_TTL_SECONDS (another process may still watch): its time has passed here.
    expect(await harness.services.redis.ttl(takeoverKeys.takeover(customer))).toBeLessThanOrEqual(WATCHED_TTL_SECONDS);
    await harness.services.redis.hset(takeoverKeys.takeover(customer), 'watchedUntil', Date.now() - 1);
    await harness.sendWhatsapp({ from: customer, body: 'thanks' });
    await answered(4);
    expect(await publications()).toEqual(['message', 'message']);
  });
});

describe('the takeover mirror a customer batch reads', () => {
  const other = 'whatsapp:+447700913902';
  const ours = new Set([takeoverKeys.takeover(other), takeoverKeys.watched(other)]);

  test('one command, watched or not: the takeover and the watched mark together', async () => {
    const monitor = await openMonitor(process.env.TEST_REDIS_URL ?? '');
    const commands: string[] = [];
    // The commands a process sends on this conversation's takeover keys (a script's own calls are part of its EVALSHA).
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source !== 'lua' && args.some((arg) => ours.has(arg))) commands.push((args[0] ?? '').toLowerCase());
    });
    const settled = async () => {
      await turnsSettled(harness.services);
      const mark = `mark:${Date.now()}:${Math.random()}`;
      let seen = false;
      const onMark = (_time: string, args: string[]) => {
        if (args[1] === mark) seen = true;
      };
      monitor.on('monitor', onMark);
      await harness.services.redis.echo(mark);
      await eventually(() => seen || undefined);
      monitor.off('monitor', onMark);
      return commands.splice(0);
    };
    const sent = () => harness.twilio.messages.filter((message) => message.to === other).length;
    try {
      await harness.sendWhatsapp({ from: other, body: 'is anyone reading this?' });
      await eventually(() => (sent() >= 1 ? true : undefined), 20_000);
      expect(await settled()).toEqual(['hgetall']);

      const events: ConversationEvent[] = [];
      const unsubscribe = await harness.services.takeover.subscribe(other, (event) => events.push(event));
      // The page's mark (a script, renewed while it stays) is not the batch's read.
      await settled();
      await harness.sendWhatsapp({ from: other, body: 'and now?' });
      await eventually(() => (sent() >= 2 ? true : undefined), 20_000);
      await eventually(() => (events.some((event) => event.type === 'message' && event.message.author === 'assistant') ? true : undefined));
      expect(events.map((event) => (event.type === 'message' ? event.message.author : event.type))).toEqual(['customer', 'assistant']);
      expect((await settled()).filter((command) => command !== 'evalsha')).toEqual(['hgetall']);
      await unsubscribe();
    } finally {
      monitor.disconnect();
    }
  });
});
