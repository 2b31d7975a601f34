/**
 * A worker's heartbeat on real Redis, through proxies a test can cut: a missing heartbeat is a
 * death only while Redis has been reachable. An outage longer than the heartbeat lets a live
 * worker's lapse, and that worker may reconnect later than the one reading its mark; for a while
 * after its own connection failed, a reader counts no such mark as a death (so an outage never
 * counts towards quarantining a batch). Nor is a process's own mark ever a death; a worker that
 * is gone while Redis is up is.
 */
import net from 'node:net';
import { afterEach, expect, test } from '@jest/globals';
import { Redis } from 'ioredis';
import { createLogger } from '../../src/logger.js';
import { redisKeys } from '../../src/queue/keys.js';
import { startWorkerHeartbeat, type WorkerHeartbeat } from '../../src/queue/worker-heartbeat.js';

const LOCK_TTL_MS = 1_500;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A TCP proxy to the test Redis whose connections `cut` drops (refusing new ones) until `restore`. */
async function cuttableProxy() {
  const target = new URL(process.env.TEST_REDIS_URL ?? '');
  const sockets = new Set<net.Socket>();
  let cut = false;
  const server = net.createServer((client) => {
    if (cut) return void client.destroy();
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}${target.pathname}`,
    cut() {
      cut = true;
      for (const socket of sockets) socket.destroy();
      sockets.clear();
    },
    restore() {
      cut = false;
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function worker(url: string): Promise<{ client: Redis; heartbeat: WorkerHeartbeat }> {
  // Reconnects at once, as ioredis does early on (its delay grows to 2 s).
  const client = new Redis(url, { maxRetriesPerRequest: 1, retryStrategy: () => 100 });
  client.on('error', () => undefined);
  const heartbeat = startWorkerHeartbeat(client, LOCK_TTL_MS, createLogger({ level: 'error', sink: () => undefined }));
  cleanups.push(
    () => client.disconnect(),
    () => heartbeat.stop(),
  );
  await new Promise((resolve) => (client.status === 'ready' ? resolve(undefined) : client.once('ready', resolve)));
  return { client, heartbeat };
}

test('a live worker whose heartbeat lapsed in a Redis outage is not taken for dead; a gone one is', async () => {
  const proxyA = await cuttableProxy();
  const proxyB = await cuttableProxy();
  cleanups.push(proxyA.close, proxyB.close);
  const a = await worker(proxyA.url);
  const b = await worker(proxyB.url);
  const markOfA = a.heartbeat.runningMark('token-a');
  await sleep(100);
  expect(await b.heartbeat.isDead(markOfA)).toBe(false);
  // Its own mark is never a dead worker's.
  expect(await b.heartbeat.isDead(b.heartbeat.runningMark('token-b'))).toBe(false);

  // Redis out for both, longer than the heartbeat (two thirds of the lock's TTL): A's lapses.
  proxyA.cut();
  proxyB.cut();
  await sleep(LOCK_TTL_MS + 500);
  // B is back first; A reconnects a moment later (its retry is further off).
  proxyB.restore();
  await new Promise((resolve) => (b.client.status === 'ready' ? resolve(undefined) : b.client.once('ready', resolve)));
  expect(await b.client.exists(redisKeys.workerAlive(markOfA.split('|')[0] ?? ''))).toBe(0);
  expect(await b.heartbeat.isDead(markOfA)).toBe(false);
  proxyA.restore();

  // A gone while Redis is up (its heartbeat stopped and expired) is dead once the outage is past.
  a.heartbeat.stop();
  await sleep(6_000);
  expect(await b.heartbeat.isDead(markOfA)).toBe(true);
  // A mark of an older release (no process) is counted as gone.
  expect(await b.heartbeat.isDead('token-only')).toBe(true);
}, 30_000);
