/**
 * Delivery status callbacks for one message race (Twilio sends sent, delivered, read close
 * together) and arrive out of order. The ledger entry in Redis is compared-and-set inside one
 * script, and the transcript writer applies the same rank rule in MongoDB: whatever the order
 * and concurrency, the highest status wins in both, and nothing moves backwards.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startHarness, type Harness } from '../support/harness.js';
import { transcriptsWritten } from '../support/settled.js';

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness();
});
afterAll(() => harness.close());

async function sentPart(sid: string) {
  const { transcripts } = harness.services;
  const [part] = await transcripts.saveReplyParts({
    conversationId: `whatsapp:${sid}`,
    channel: 'whatsapp',
    replyTo: `in-${sid}`,
    roleId: 'support',
    parts: ['hello'],
  });
  if (!part) throw new Error('no part stored');
  await transcripts.markPartSent(part._id, sid, 'queued');
  return part._id;
}

describe('updateDeliveryStatus', () => {
  test('callbacks racing each other end on the highest status, in Redis and in MongoDB', async () => {
    const id = await sentPart('SMrace1');
    const { transcripts } = harness.services;
    const results = await Promise.all(
      (['sent', 'read', 'delivered', 'sent', 'delivered'] as const).map((status) => transcripts.updateDeliveryStatus({ channelMessageId: 'SMrace1', status })),
    );
    expect(results).toEqual([true, true, true, true, true]);
    expect(await transcripts.message(id)).toMatchObject({ status: 'read', channelMessageId: 'SMrace1' });
    await transcriptsWritten(harness.services);
    expect(await transcripts.messages.findById(id).lean()).toMatchObject({ status: 'read', channelMessageId: 'SMrace1' });
  });

  test('a status arriving after a later one keeps the later one', async () => {
    const id = await sentPart('SMrace2');
    const { transcripts } = harness.services;
    expect(await transcripts.updateDeliveryStatus({ channelMessageId: 'SMrace2', status: 'read' })).toBe(true);
    expect(await transcripts.updateDeliveryStatus({ channelMessageId: 'SMrace2', status: 'delivered' })).toBe(true);
    expect(await transcripts.message(id)).toMatchObject({ status: 'read' });
    await transcriptsWritten(harness.services);
    expect(await transcripts.messages.findById(id).lean()).toMatchObject({ status: 'read' });
  });

  test('a delivery id the service never sent is reported unknown', async () => {
    expect(await harness.services.transcripts.updateDeliveryStatus({ channelMessageId: 'SMnever', status: 'read' })).toBe(false);
  });
});
