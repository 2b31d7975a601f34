/**
 * Delivery status callbacks for one message race (Twilio sends sent, delivered, read close
 * together) and arrive out of order. The ledger entry in Redis is compared-and-set inside one
 * script, and the transcript writer applies the same rank rule in MongoDB: whatever the order
 * and concurrency, the highest status wins in both, and nothing moves backwards. A callback names
 * its part (its URL carries the ledger key); one for a part sent by an earlier version, which
 * named none, finds it by the delivery id's key that version wrote. The reply's turn payload,
 * kept in its last part's entry (an earlier version's in a field of its own), is taken once.
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

/** A reply part as an earlier version left it sent: the entry, and the delivery id's key beside it (its callbacks name no part). */
async function sentByEarlierVersion(sid: string) {
  const { redis } = harness.services;
  const id = `out:whatsapp:in-${sid}#0`;
  const at = new Date().toISOString();
  const entry = { _id: id, conversationId: `whatsapp:${sid}`, channel: 'whatsapp', direction: 'outbound', text: 'hello', replyTo: `in-${sid}` };
  await redis.hset(
    transcriptKeys.reply('whatsapp', `in-${sid}`),
    '0',
    JSON.stringify({ ...entry, part: 0, partCount: 1, roleId: 'support', status: 'queued', channelMessageId: sid, createdAt: at, updatedAt: at }),
  );
  await redis.set(transcriptKeys.delivery(sid), id, 'EX', 60);
  return id;
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

describe("a reply's turn payload", () => {
  test('held by its last part until sent: the parts read back never carry it, and a resuming attempt takes it once, from any part', async () => {
    const { transcripts, redis } = harness.services;
    const input = {
      conversationId: 'whatsapp:SMheld',
      channel: 'whatsapp',
      replyTo: 'in-SMheld',
      roleId: 'support',
      parts: ['one', 'two', 'three'],
      turn: '{"roleId":"support","usage":[]}',
    };
    const [first] = await transcripts.saveReplyParts(input);
    expect(first?.turn).toBe(input.turn);
    expect((await redis.hkeys(transcriptKeys.reply('whatsapp', 'in-SMheld'))).sort()).toEqual(['0', '1', '2']);
    const resumed = await transcripts.replyParts('whatsapp', 'in-SMheld');
    expect(resumed.map((part) => part.turn)).toEqual([undefined, undefined, undefined]);
    expect(await transcripts.takeTurn(first?._id ?? '')).toBe(input.turn);
    expect(await transcripts.takeTurn(first?._id ?? '')).toBeUndefined();
    expect(await transcripts.dropTurn(resumed[2]?._id ?? '')).toBe(false);
    expect(await transcripts.markPartSent(resumed[2]?._id ?? '', 'SMheld2', 'queued', undefined, true)).toBe(false);
    expect(await transcripts.message(resumed[2]?._id ?? '')).toMatchObject({ status: 'queued', channelMessageId: 'SMheld2', text: 'three' });
  });

  test('of a reply an earlier version stored (a field of its own beside the parts) is taken once', async () => {
    const { transcripts, redis } = harness.services;
    const key = transcriptKeys.reply('whatsapp', 'in-SMolder');
    const at = new Date().toISOString();
    const part = {
      _id: 'out:whatsapp:in-SMolder#0',
      conversationId: 'whatsapp:SMolder',
      channel: 'whatsapp',
      direction: 'outbound',
      text: 'hi',
      replyTo: 'in-SMolder',
    };
    await redis.hset(
      key,
      '0',
      JSON.stringify({ ...part, part: 0, partCount: 1, roleId: 'support', status: 'pending', createdAt: at, updatedAt: at }),
      'turn',
      '{"roleId":"support"}',
    );
    const [resumed] = await transcripts.replyParts('whatsapp', 'in-SMolder');
    expect(resumed?.turn).toBeUndefined();
    expect(await transcripts.takeTurn(part._id)).toBe('{"roleId":"support"}');
    expect(await transcripts.takeTurn(part._id)).toBeUndefined();
    expect(await redis.hkeys(key)).toEqual(['0']);
  });
});

describe('updateDeliveryStatus', () => {
  test('callbacks racing each other end on the highest status, in Redis and in MongoDB', async () => {
    const id = await sentPart('SMrace1');
    const { transcripts } = harness.services;
    const results = await Promise.all(
      (['sent', 'read', 'delivered', 'sent', 'delivered'] as const).map((status) =>
        transcripts.updateDeliveryStatus({ channelMessageId: 'SMrace1', messageId: id, status }),
      ),
    );
    expect(results).toEqual([true, true, true, true, true]);
    expect(await transcripts.message(id)).toMatchObject({ status: 'read', channelMessageId: 'SMrace1' });
    await transcriptsWritten(harness.services);
    expect(await transcripts.messages.findById(id).lean()).toMatchObject({ status: 'read', channelMessageId: 'SMrace1' });
  });

  test('a status arriving after a later one keeps the later one', async () => {
    const id = await sentPart('SMrace2');
    const { transcripts } = harness.services;
    expect(await transcripts.updateDeliveryStatus({ channelMessageId: 'SMrace2', messageId: id, status: 'read' })).toBe(true);
    expect(await transcripts.updateDeliveryStatus({ channelMessageId: 'SMrace2', messageId: id, status: 'delivered' })).toBe(true);
    expect(await transcripts.message(id)).toMatchObject({ status: 'read' });
    await transcriptsWritten(harness.services);
    expect(await transcripts.messages.findById(id).lean()).toMatchObject({ status: 'read' });
  });

  test('a callback that lands before the sent mark is not moved back by it', async () => {
    const { transcripts } = harness.services;
    const [part] = await transcripts.saveReplyParts({
      conversationId: 'whatsapp:SMearly',
      channel: 'whatsapp',
      replyTo: 'in-SMearly',
      roleId: 'support',
      parts: ['hi'],
    });
    if (!part) throw new Error('no part stored');
    expect(await transcripts.claimPart(part._id)).toBe(true);
    expect(await transcripts.updateDeliveryStatus({ channelMessageId: 'SMearly', messageId: part._id, status: 'delivered' })).toBe(true);
    await transcripts.markPartSent(part._id, 'SMearly', 'queued');
    expect(await transcripts.message(part._id)).toMatchObject({ status: 'delivered', channelMessageId: 'SMearly' });
    expect(await transcripts.deliveryOwners([part._id])).toEqual(new Map([['SMearly', part._id]]));
  });

  test('a callback of a part sent by an earlier version (naming no part) finds it by the delivery id it recorded', async () => {
    const id = await sentByEarlierVersion('SMearlier');
    const { transcripts } = harness.services;
    expect(await transcripts.updateDeliveryStatus({ channelMessageId: 'SMearlier', status: 'delivered' })).toBe(true);
    expect(await transcripts.message(id)).toMatchObject({ status: 'delivered', channelMessageId: 'SMearlier' });
    await transcriptsWritten(harness.services);
    expect(await transcripts.messages.findById(id).lean()).toMatchObject({ status: 'delivered', channelMessageId: 'SMearlier' });
  });

  test("a callback naming a part sent as another delivery id (a lost send's, resent) leaves it as it is", async () => {
    const id = await sentPart('SMresent');
    const { transcripts } = harness.services;
    expect(await transcripts.updateDeliveryStatus({ channelMessageId: 'SMlost', messageId: id, status: 'failed', errorCode: '63016' })).toBe(false);
    expect(await transcripts.message(id)).toMatchObject({ status: 'queued', channelMessageId: 'SMresent' });
  });

  test('a delivery id the service never sent, or a part it never stored, is reported unknown', async () => {
    const { transcripts } = harness.services;
    expect(await transcripts.updateDeliveryStatus({ channelMessageId: 'SMnever', status: 'read' })).toBe(false);
    expect(await transcripts.updateDeliveryStatus({ channelMessageId: 'SMnever', messageId: 'out:whatsapp:in-SMnever#0', status: 'read' })).toBe(false);
  });
});
