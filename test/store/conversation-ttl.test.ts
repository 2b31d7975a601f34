/**
 * A conversation's hot copy in Redis lives CONVERSATION_TTL_SECONDS after its last turn, but its
 * TTL is not set again on every turn (one EXPIRE a message): a process sets it at most once a
 * day per conversation (creating it counts). The hash always has a TTL, also when it was lost and created again.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { CONVERSATION_TTL_SECONDS, transcriptKeys } from '../../src/store/transcript-keys.js';
import { startHarness, type Harness } from '../support/harness.js';

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness({ worker: false });
});
afterAll(() => harness.close());

const key = 'whatsapp:+447700913101';
const hash = transcriptKeys.conversation(key);
const turn = async (index: number) => {
  const { transcripts } = harness.services;
  const { recent } = await transcripts.openConversation({ key, channel: 'whatsapp', address: key });
  await transcripts.saveRecent(key, [...recent, { id: `in:whatsapp:SMttl${index}`, direction: 'inbound', text: `message ${index}` }], Date.now());
};

describe("a conversation's hot copy", () => {
  test('three turns: the TTL set when it is created, not again on every turn', async () => {
    await turn(0);
    expect(await harness.services.redis.ttl(hash)).toBeGreaterThan(CONVERSATION_TTL_SECONDS - 60);
    // As if some time had passed: a TTL set on every turn would be back at CONVERSATION_TTL_SECONDS.
    await harness.services.redis.expire(hash, 1000);
    await turn(1);
    await turn(2);
    expect(await harness.services.redis.ttl(hash)).toBeLessThanOrEqual(1000);
    expect((await harness.services.transcripts.recent(key)).map((entry) => entry.text)).toEqual(['message 0', 'message 1', 'message 2']);
  });

  test('lost from Redis and created again, it has its TTL', async () => {
    await harness.services.redis.del(hash);
    await turn(3);
    expect(await harness.services.redis.ttl(hash)).toBeGreaterThan(CONVERSATION_TTL_SECONDS - 60);
    expect((await harness.services.transcripts.recent(key)).map((entry) => entry.text)).toEqual(['message 3']);
  });
});
