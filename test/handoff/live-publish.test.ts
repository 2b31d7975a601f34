/**
 * A conversation's messages are published for the live page only while a page watches it: a
 * customer message and the assistant's reply cost no PUBLISH (and no round trip) when nobody
 * does — nearly always — and a page that subscribes gets both from its next message on. What is
 * published is watched on the conversation's channel by a plain subscriber (which marks nothing).
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import type { ConversationEvent } from '../../src/takeover/takeover.js';
import { takeoverKeys } from '../../src/takeover/takeover-state.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
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
    await unsubscribe();
    // The mark outlives the page by at most WATCHED_TTL_SECONDS (another process may still watch): expired here.
    await harness.services.redis.del(takeoverKeys.watched(customer));
    await harness.sendWhatsapp({ from: customer, body: 'thanks' });
    await answered(4);
    expect(await publications()).toEqual(['message', 'message']);
  });
});
