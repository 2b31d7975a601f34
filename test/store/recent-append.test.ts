/**
 * Words the service says outside a turn (the satisfaction question, an outage's messages) join a
 * conversation's recent history in one script: appended in order after what it holds, an entry it
 * holds already skipped, the oldest going past RECENT_MESSAGE_LIMIT, the customer's time stamped
 * when given; nothing for a conversation Redis does not hold. Marked entries reach the widget's
 * history but never the model's.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { toModelHistory } from '../../src/orchestrator/history.js';
import { CUSTOMER_AT_FIELD, transcriptKeys } from '../../src/store/transcript-keys.js';
import { RECENT_MESSAGE_LIMIT } from '../../src/store/transcript-store.js';
import { startHarness, type Harness } from '../support/harness.js';

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness({ worker: false });
});
afterAll(() => harness.close());

test('appended in order, once, bounded, with the customer’s time; marked entries kept from the model', async () => {
  const { transcripts, redis } = harness.services;
  const key = 'whatsapp:+447700913201';
  await transcripts.openConversation({ key, channel: 'whatsapp', address: key });
  await transcripts.saveRecent(key, [
    { id: 'in:whatsapp:SMa1', direction: 'inbound', text: 'Opening hours?' },
    { id: 'out:whatsapp:SMa1#0', direction: 'outbound', text: 'Nine to five, “every” day / ½ on Sundays.' },
  ]);
  await transcripts.appendRecent(key, [{ id: 'out:whatsapp:q#0', direction: 'outbound', text: 'How did we do?\n1. ⭐', offModel: 'rating' }]);
  await transcripts.appendRecent(
    key,
    [
      { id: 'out:whatsapp:q#0', direction: 'outbound', text: 'How did we do?\n1. ⭐', offModel: 'rating' },
      { id: 'in:whatsapp:SMa2', direction: 'inbound', text: '4', offModel: 'rating' },
    ],
    1_700_000_000_000,
  );
  const recent = await transcripts.recent(key);
  expect(recent).toEqual([
    { id: 'in:whatsapp:SMa1', direction: 'inbound', text: 'Opening hours?' },
    { id: 'out:whatsapp:SMa1#0', direction: 'outbound', text: 'Nine to five, “every” day / ½ on Sundays.' },
    { id: 'out:whatsapp:q#0', direction: 'outbound', text: 'How did we do?\n1. ⭐', offModel: 'rating' },
    { id: 'in:whatsapp:SMa2', direction: 'inbound', text: '4', offModel: 'rating' },
  ]);
  expect(await redis.hget(transcriptKeys.conversation(key), CUSTOMER_AT_FIELD)).toBe('1700000000000');
  expect(toModelHistory(recent)).toEqual([
    { role: 'user', content: 'Opening hours?' },
    { role: 'assistant', content: 'Nine to five, “every” day / ½ on Sundays.' },
  ]);

  const many = Array.from({ length: RECENT_MESSAGE_LIMIT }, (_, index) => ({
    id: `in:whatsapp:SMb${index}`,
    direction: 'inbound' as const,
    text: `m${index}`,
  }));
  await transcripts.appendRecent(key, many);
  expect((await transcripts.recent(key)).map((entry) => entry.id)).toEqual(many.map((entry) => entry.id));
});

test('a conversation Redis does not hold gets nothing', async () => {
  const key = 'whatsapp:+447700913202';
  await harness.services.transcripts.appendRecent(key, [{ id: 'out:whatsapp:x#0', direction: 'outbound', text: 'Hi' }]);
  expect(await harness.services.redis.exists(transcriptKeys.conversation(key))).toBe(0);
});
