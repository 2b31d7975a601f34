/**
 * One turn worker's context on the real Redis, without a BullMQ worker: the steps of
 * `src/queue/turn-*.ts` called one at a time by a test. Its turns queue has a prefix of its own,
 * its conversation keys are fresh per call (`conversation()`), and what the give-up and holding
 * handlers were asked is recorded.
 */
import { inboundMessage } from './inbound-message.js';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import type { InboundMessage } from '../../src/contracts/index.js';
import { createConversationInbox, type ConversationInbox } from '../../src/queue/conversation-inbox.js';
import { createTurnQueue, type TurnQueue } from '../../src/queue/turn-queue.js';
import { createTurnContext, type TurnContext } from '../../src/queue/turn-context.js';
import type { GiveUpFailure, InboundBatch, TurnWorkerOptions } from '../../src/queue/turn-worker.js';
import type { LogLine } from '../support/harness.js';

export interface StepsRig {
  redis: Redis;
  inbox: ConversationInbox;
  queue: TurnQueue;
  context: TurnContext;
  logs: LogLine[];
  givenUp: { batch: InboundBatch; failure: GiveUpFailure }[];
  held: InboundBatch[];
  /** A conversation key no other test uses. */
  conversation(): string;
  /** Appends a customer message to the conversation's inbox (as intake does, without a job); returns it. */
  send(conversationKey: string, text: string, receivedAt?: number, channel?: string): Promise<InboundMessage>;
  close(): Promise<void>;
}

export async function startStepsRig(options: Partial<TurnWorkerOptions> = {}): Promise<StepsRig> {
  const url = process.env.TEST_REDIS_URL;
  if (!url) throw new Error('global-setup did not publish TEST_REDIS_URL');
  const redis = new Redis(url, { maxRetriesPerRequest: 2 });
  const connection = { url, maxRetriesPerRequest: null };
  const logs: LogLine[] = [];
  const givenUp: StepsRig['givenUp'] = [];
  const held: InboundBatch[] = [];
  const inbox = createConversationInbox(redis);
  const queue = createTurnQueue(connection, `{steps-${randomUUID().slice(0, 8)}}`, 100);
  const shutdown = new AbortController();
  const context = createTurnContext({
    connection,
    redis,
    inbox,
    queue,
    handle: async () => undefined,
    giveUp: async (batch, failure, assertHeld) => {
      assertHeld();
      givenUp.push({ batch, failure });
    },
    holding: {
      dueAt: (_batch, _error, waitingSince) => waitingSince,
      send: async (batch, assertHeld) => {
        assertHeld();
        held.push(batch);
        return true;
      },
    },
    logger: createLogger({ level: 'debug', sink: (line) => logs.push(JSON.parse(line) as LogLine) }),
    metrics: createMetrics(),
    concurrency: 1,
    lockTtlMs: 3000,
    coalesceMs: 0,
    retryBudgetMs: 60_000,
    retryBackoffMs: 1000,
    shutdown: shutdown.signal,
    ...options,
  });
  return {
    redis,
    inbox,
    queue,
    context,
    logs,
    givenUp,
    held,
    conversation: () => `whatsapp:+4477009${String(Math.floor(Math.random() * 1e5)).padStart(5, '0')}-${randomUUID().slice(0, 8)}`,
    async send(conversationKey, text, receivedAt = Date.now(), channel = 'whatsapp') {
      const message = inboundMessage(conversationKey, text, { channel, receivedAt });
      await inbox.accept(message);
      return message;
    },
    async close() {
      shutdown.abort();
      context.heartbeat.stop();
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      redis.disconnect();
    },
  };
}
