/**
 * Delivery status callbacks for one message race (Twilio sends sent, delivered, read close
 * together). `updateDeliveryStatus` compares-and-sets on the status it read; a lost race must
 * not be reported as applied: it reads again and applies, or says it failed.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { StorageWriteError } from '../../src/errors/index.js';
import { startHarness, type Harness } from '../support/harness.js';

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness({ worker: false });
});
afterAll(() => harness.close());

/** Makes the next `races` compare-and-sets lose: another callback moves the status first. */
function loseRaces(races: number, rival: (attempt: number) => string) {
  const { messages } = harness.services.transcripts;
  const original = messages.findOneAndUpdate.bind(messages);
  let lost = 0;
  const patched = (...args: Parameters<typeof messages.findOneAndUpdate>) => {
    const [filter] = args;
    if (lost < races && filter && typeof filter === 'object' && 'status' in filter) {
      const moved = rival(lost);
      lost += 1;
      // The rival's write lands between the store's read and its compare-and-set.
      return {
        exec: async () => (await messages.updateOne({ _id: String(Reflect.get(filter, '_id')) }, { $set: { status: moved } }).exec(), original(...args).exec()),
      };
    }
    return original(...args);
  };
  Object.assign(messages, { findOneAndUpdate: patched });
  return () => Object.assign(messages, { findOneAndUpdate: original });
}

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
  test('after losing three races it still applies the newer status', async () => {
    const id = await sentPart('SMrace1');
    const restore = loseRaces(3, (attempt) => (attempt % 2 === 0 ? 'sent' : 'queued'));
    try {
      expect(await harness.services.transcripts.updateDeliveryStatus({ channelMessageId: 'SMrace1', status: 'read' })).toBe(true);
    } finally {
      restore();
    }
    expect(await harness.services.transcripts.messages.findById(id).lean()).toMatchObject({ status: 'read' });
  });

  test('a race lost to a later status keeps the later one', async () => {
    const id = await sentPart('SMrace2');
    const restore = loseRaces(1, () => 'read');
    try {
      expect(await harness.services.transcripts.updateDeliveryStatus({ channelMessageId: 'SMrace2', status: 'delivered' })).toBe(true);
    } finally {
      restore();
    }
    expect(await harness.services.transcripts.messages.findById(id).lean()).toMatchObject({ status: 'read' });
  });

  test('a status that keeps losing is reported as a failed write, not as applied', async () => {
    const id = await sentPart('SMrace3');
    const restore = loseRaces(1_000, (attempt) => (attempt % 2 === 0 ? 'sent' : 'queued'));
    try {
      await expect(harness.services.transcripts.updateDeliveryStatus({ channelMessageId: 'SMrace3', status: 'read' })).rejects.toBeInstanceOf(
        StorageWriteError,
      );
    } finally {
      restore();
    }
    expect((await harness.services.transcripts.messages.findById(id).lean())?.status).not.toBe('read');
  });
});
