/**
 * Retention on a MongoDB-wire server without TTL indexes: a scheduled purge removes
 * transcripts and hand-offs past TRANSCRIPT_RETENTION_DAYS and keeps everything newer.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { purgeExpired } from '../../src/store/retention.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { transcriptsWritten } from '../support/settled.js';

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness({ env: { TRANSCRIPT_RETENTION_DAYS: '30' } });
});
afterAll(() => harness.close());

describe('retention', () => {
  test('the purge is scheduled when a worker starts', async () => {
    const { Queue } = await import('bullmq');
    const queue = new Queue('maintenance', { connection: harness.services.redis, prefix: harness.queuePrefix });
    try {
      const keys = await eventually(async () => {
        const found = (await queue.getJobSchedulers()).map((scheduler) => scheduler.key);
        return found.length ? found : undefined;
      });
      expect(keys).toContain('transcript-purge');
    } finally {
      await queue.close();
    }
  });

  test('removes what is older than the retention period and keeps the rest', async () => {
    // The scheduled purge (first run at the worker's start) must not race this one: paused, and any run in progress over.
    const { Queue } = await import('bullmq');
    const maintenance = new Queue('maintenance', { connection: harness.services.redis, prefix: harness.queuePrefix });
    await maintenance.pause();
    await eventually(async () => ((await maintenance.getActiveCount()) === 0 ? true : undefined));
    try {
      await purgeOnce();
    } finally {
      await maintenance.resume();
      await maintenance.close();
    }
  });

  async function purgeOnce() {
    const { transcripts } = harness.services;
    const old = new Date(Date.now() - 40 * 24 * 3600 * 1000);
    await transcripts.conversations.create({
      _id: 'whatsapp:+440000000001',
      channel: 'whatsapp',
      address: 'whatsapp:+440000000001',
      recent: [],
      createdAt: old,
      updatedAt: old,
    });
    await transcripts.recordInbound({ conversationId: 'whatsapp:+440000000001', channel: 'whatsapp', channelMessageId: 'SMold', text: 'old', receivedAt: old });
    await transcripts.recordInbound({
      conversationId: 'whatsapp:+440000000002',
      channel: 'whatsapp',
      channelMessageId: 'SMnew',
      text: 'new',
      receivedAt: new Date(),
    });
    await transcriptsWritten(harness.services);

    const removed = await purgeExpired({
      days: harness.config.retention,
      transcripts,
      handoffs: harness.services.handoffs,
      logger: harness.services.logger,
      metrics: harness.services.metrics,
    });
    expect(removed).toMatchObject({ messages: 1, conversations: 1 });
    expect(await transcripts.messages.findById('in:whatsapp:SMold').lean()).toBeNull();
    expect(await transcripts.messages.findById('in:whatsapp:SMnew').lean()).not.toBeNull();
  }
});
