/**
 * Redis holds the hot path now: inboxes, the send ledger, recent history and the transcript
 * outbox. Restarted mid-burst with AOF on (`appendfsync everysec`, as docs/deployment.md asks), it must
 * come back with all of them: every message answered exactly once and in order (the fake
 * Twilio counts every send), and every inbound message and reply in MongoDB exactly once.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { allowConsole } from '../support/console-guard.js';
import { conversationReport } from '../support/conversation-report.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { startRestartableRedis, type RestartableRedisHandle } from '../support/services.js';
import { transcriptsWritten } from '../support/settled.js';
import { burstMessages, countDeliveries, recordFigures, sendBurst, type BurstMessage } from './burst.js';

const answer = (body: string) => `answer to ${body}`;

/** Each conversation of the burst missing an answer: where it stands (inbox head, turn state, lock, jobs, logs). */
async function unanswered(harness: Harness, burst: BurstMessage[][]): Promise<string> {
  const reports: string[] = [];
  for (const messages of burst) {
    const received = harness.twilio.messages.filter((message) => message.to === messages[0]!.from).map((message) => message.body);
    const missing = messages.filter((message) => !received.includes(answer(message.body))).map((message) => message.body);
    if (missing.length > 0) reports.push(`unanswered: ${JSON.stringify(missing)}\n${await conversationReport(harness, conversationKeyFor(messages[0]!.from))}`);
  }
  return reports.join('\n');
}

describe('Redis restarted (AOF) during a burst', () => {
  let redis: RestartableRedisHandle;
  let harness: Harness;
  beforeAll(async () => {
    redis = await startRestartableRedis();
    harness = await startHarness({
      env: { REDIS_URL: redis.url, MESSAGE_RETRY_BUDGET_MS: '120000', MESSAGE_RETRY_BACKOFF_MS: '250' },
      script: ({ userText }) => ({ text: answer(userText), delayMs: 50 }),
    });
  });
  afterAll(async () => {
    await harness.close();
    await redis.stop();
  });

  test('nothing is lost or sent twice, and MongoDB gets every message once', async () => {
    // BullMQ prints its connections' errors while Redis is down (not the service's logger).
    allowConsole('error', /ECONNRESET|ECONNREFUSED|EPIPE|Connection is closed/);
    expect(harness.logs.filter((line) => line.event === 'redis-aof-off')).toEqual([]);
    const burst = burstMessages(6, 4, '84');
    const total = burst.flat().length;
    const sending = sendBurst(harness, burst, 150);
    await eventually(() => harness.twilio.messages.length >= 5 || undefined, 20_000);
    const sentBefore = harness.twilio.messages.length;
    await redis.restart();
    const restartedAt = Date.now();
    await sending;
    await eventually(() => harness.twilio.messages.length >= total || undefined, 90_000).catch(async (error: unknown) => {
      throw new Error(`${String(error)}\n${await unanswered(harness, burst)}`);
    });
    // Anything sent twice would arrive right behind the last answer.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const count = countDeliveries(harness.twilio, burst, answer);
    await recordFigures('redis-restart', {
      messages: count.expected,
      sentBeforeRestart: sentBefore,
      lost: count.lost,
      duplicated: count.duplicated,
      outOfOrder: count.outOfOrder,
      recoverMs: count.lastReplyAt - restartedAt,
    });
    expect(count).toMatchObject({ lost: 0, duplicated: 0, outOfOrder: 0 });
    expect(harness.twilio.messages).toHaveLength(total);

    await transcriptsWritten(harness.services, 60_000);
    for (const messages of burst) {
      const stored = await harness.services.transcripts.conversationMessages(conversationKeyFor(messages[0]!.from));
      const of = (direction: string) => stored.filter((message) => message.direction === direction).map((message) => message.text);
      expect(of('inbound')).toEqual(messages.map((message) => message.body));
      expect(of('outbound')).toEqual(messages.map((message) => answer(message.body)));
      expect(stored.every((message) => message.status === 'received' || message.status === 'queued')).toBe(true);
    }
  }, 180_000);
});
