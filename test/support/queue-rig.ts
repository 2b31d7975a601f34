/**
 * The turn pipeline's queue layer alone, on the real Redis: the conversation inbox, the turns
 * queue and a turn worker with a handler and give-up handler the test writes — for tests that
 * drive retries, re-drives, new messages and lock expiry against each other without a model,
 * MongoDB or a channel. Messages go in as intake puts them (the inbox append, then a job only
 * when the append asks for one).
 *
 * `startDelayingProxy` stands between a client and Redis and holds back the commands a test
 * names (e.g. the lock's release), widening a race window the way a slow network would.
 */
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { Redis } from 'ioredis';
import type { Worker } from 'bullmq';
import { createLogger } from '../../src/logger.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import { createConversationInbox, type ConversationInbox } from '../../src/queue/conversation-inbox.js';
import { createTurnQueue, enqueueTurn, type TurnJob, type TurnQueue } from '../../src/queue/turn-queue.js';
import { createTurnWorker, type GiveUpHandler, type InboundHandler } from '../../src/queue/turn-worker.js';
import type { InboundMessage } from '../../src/contracts/index.js';
import type { LogLine } from './harness.js';
import { respCommands } from './redis-fault-proxy.js';

export interface QueueRigOptions {
  handle: InboundHandler;
  giveUp: GiveUpHandler;
  /** The worker's own Redis for its conversation locks (e.g. through `startDelayingProxy`); the rig's by default. */
  lockRedisUrl?: string;
  /**
   * The worker's own Redis for its inbox and locks, not BullMQ's (e.g. through `startRedisFaultProxy`); the rig's by
   * default. Its commands fail at once while it is disconnected (no retries across reconnections).
   */
  workerRedisUrl?: string;
  lockTtlMs?: number;
  coalesceMs?: number;
  retryBudgetMs?: number;
  retryBackoffMs?: number;
  concurrency?: number;
}

export interface QueueRig {
  redis: Redis;
  inbox: ConversationInbox;
  queue: TurnQueue;
  worker: Worker<TurnJob>;
  metrics: Metrics;
  logs: LogLine[];
  /** Puts a customer message in its inbox as intake does; returns its id. */
  send(conversationKey: string, text: string): Promise<string>;
  /** Jobs of the turns queue not yet finished (waiting, delayed, active, prioritized). */
  pendingJobs(): Promise<number>;
  close(): Promise<void>;
}

function redisUrl(): string {
  const url = process.env.TEST_REDIS_URL;
  if (!url) throw new Error('global-setup did not publish TEST_REDIS_URL');
  return url;
}

export async function startQueueRig(options: QueueRigOptions): Promise<QueueRig> {
  const url = redisUrl();
  const redis = new Redis(url, { maxRetriesPerRequest: 2 });
  const lockRedis = options.workerRedisUrl
    ? new Redis(options.workerRedisUrl, { maxRetriesPerRequest: 0 })
    : options.lockRedisUrl
      ? new Redis(options.lockRedisUrl, { maxRetriesPerRequest: 2 })
      : redis;
  const prefix = `{rig-${randomUUID().slice(0, 8)}}`;
  const connection = { url, maxRetriesPerRequest: null };
  const logs: LogLine[] = [];
  const logger = createLogger({ level: 'debug', sink: (line) => logs.push(JSON.parse(line) as LogLine) });
  const metrics = createMetrics();
  const inbox = createConversationInbox(redis);
  const retryBackoffMs = options.retryBackoffMs ?? 100;
  const queue = createTurnQueue(connection, prefix, retryBackoffMs);
  const shutdown = new AbortController();
  const worker = createTurnWorker({
    connection,
    redis: lockRedis,
    inbox: options.workerRedisUrl ? createConversationInbox(lockRedis) : inbox,
    queue,
    handle: options.handle,
    giveUp: options.giveUp,
    logger,
    metrics,
    concurrency: options.concurrency ?? 8,
    lockTtlMs: options.lockTtlMs ?? 3000,
    coalesceMs: options.coalesceMs ?? 0,
    retryBudgetMs: options.retryBudgetMs ?? 60_000,
    retryBackoffMs,
    shutdown: shutdown.signal,
    prefix,
  });
  await worker.waitUntilReady();
  return {
    redis,
    inbox,
    queue,
    worker,
    metrics,
    logs,
    async send(conversationKey, text) {
      const messageId = `SM${randomUUID().replace(/-/g, '')}`;
      const message: InboundMessage = {
        channel: 'whatsapp',
        conversationKey,
        messageId,
        from: { address: conversationKey },
        text,
        receivedAt: Date.now(),
        metadata: {},
      };
      if ((await inbox.accept(message)) === 'appended') await enqueueTurn(queue, { conversationKey, messageId });
      return messageId;
    },
    async pendingJobs() {
      const counts = await queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized', 'waiting-children');
      return Object.values(counts).reduce((sum, count) => sum + count, 0);
    },
    async close() {
      shutdown.abort();
      await worker.close();
      await queue.obliterate({ force: true }).catch(() => undefined);
      await queue.close();
      if (lockRedis !== redis) lockRedis.disconnect();
      redis.disconnect();
    },
  };
}

/**
 * A TCP proxy to Redis that holds back, by `delayMs`, every command a client sends that `matches`
 * (and, to keep the connection's order, whatever that client sends after it meanwhile). It reads
 * whole commands, so a held command is never missed for sharing a packet with another.
 */
export async function startDelayingProxy(
  matches: (command: string) => boolean,
  delayMs: number,
): Promise<{ url: string; delayed: () => number; close(): Promise<void> }> {
  const target = new URL(redisUrl());
  let delayed = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    const split = respCommands();
    let chain = Promise.resolve();
    client.on('data', (chunk) => {
      for (const command of split(chunk)) {
        const hold = matches(command.toString('latin1'));
        if (hold) delayed += 1;
        chain = chain.then(async () => {
          if (hold) await new Promise((resolve) => setTimeout(resolve, delayMs));
          upstream.write(command);
        });
      }
    });
    upstream.on('data', (chunk) => client.write(chunk));
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  const url = new URL(target.toString());
  url.port = String(port);
  url.hostname = '127.0.0.1';
  return {
    url: url.toString(),
    delayed: () => delayed,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
