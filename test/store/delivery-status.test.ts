/**
 * Delivery status callbacks for one message race (Twilio sends sent, delivered, read close
 * together) and arrive out of order. The ledger entry in Redis is compared-and-set inside one
 * script, and the transcript writer applies the same rank rule in MongoDB: whatever the order
 * and concurrency, the highest status wins in both, and nothing moves backwards.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { startHarness, type Harness } from '../support/harness.js';
import { transcriptsWritten } from '../support/settled.js';
import { transcriptKeys } from '../../src/store/transcript-keys.js';

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

describe('a reply stored for sending', () => {
  test('its first part is claimed by the attempt that stored it, and only for it: a retry reads it back `sending`, to look up', async () => {
    const { transcripts } = harness.services;
    const input = {
      conversationId: 'whatsapp:SMclaim',
      channel: 'whatsapp',
      replyTo: 'in-SMclaim',
      roleId: 'support',
      parts: ['one', 'two'],
      claimFirst: true,
    };
    const stored = await transcripts.saveReplyParts(input);
    expect(stored.map((part) => [part.status, part.claimedNow])).toEqual([
      ['sending', true],
      ['pending', undefined],
    ]);
    expect(stored[0]?.claimedAt).toBeInstanceOf(Date);
    // Another attempt (a retry after a crash) gets what is stored: no claim of its own, so the ledger looks the part up.
    const retried = await transcripts.saveReplyParts(input);
    expect(retried.map((part) => [part.status, part.claimedNow])).toEqual([
      ['sending', undefined],
      ['pending', undefined],
    ]);
    expect(await transcripts.claimPart(stored[0]?._id ?? '')).toBe(false);
  });

  test("its last part's sent mark takes the turn payload once, in the same write", async () => {
    const { transcripts } = harness.services;
    const [first, last] = await transcripts.saveReplyParts({
      conversationId: 'whatsapp:SMturn',
      channel: 'whatsapp',
      replyTo: 'in-SMturn',
      roleId: 'support',
      parts: ['one', 'two'],
      turn: '{"roleId":"support"}',
    });
    if (!first || !last) throw new Error('no parts stored');
    expect(await transcripts.markPartSent(first._id, 'SMturn0', 'queued')).toBe(false);
    expect(await transcripts.markPartSent(last._id, 'SMturn1', 'queued', undefined, true)).toBe(true);
    expect(await transcripts.message(last._id)).toMatchObject({ status: 'queued', channelMessageId: 'SMturn1' });
    expect(await transcripts.takeTurn(first._id)).toBeUndefined();
    expect(await transcripts.markPartSent(last._id, 'SMturn1', 'queued', undefined, true)).toBe(false);
  });
});

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

  test('a callback that lands before the sent mark (the delivery id is on another cluster node) is not moved back by it', async () => {
    const { transcripts, redis } = harness.services;
    const [part] = await transcripts.saveReplyParts({
      conversationId: 'whatsapp:SMearly',
      channel: 'whatsapp',
      replyTo: 'in-SMearly',
      roleId: 'support',
      parts: ['hi'],
    });
    if (!part) throw new Error('no part stored');
    expect(await transcripts.claimPart(part._id)).toBe(true);
    await redis.set(transcriptKeys.delivery('SMearly'), part._id);
    expect(await transcripts.updateDeliveryStatus({ channelMessageId: 'SMearly', status: 'delivered' })).toBe(true);
    await transcripts.markPartSent(part._id, 'SMearly', 'queued');
    expect(await transcripts.message(part._id)).toMatchObject({ status: 'delivered', channelMessageId: 'SMearly' });
    expect(await transcripts.deliveryOwner('SMearly')).toBe(part._id);
  });

  test('a delivery id the service never sent is reported unknown', async () => {
    expect(await harness.services.transcripts.updateDeliveryStatus({ channelMessageId: 'SMnever', status: 'read' })).toBe(false);
  });
});
