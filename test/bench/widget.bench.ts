/**
 * Widget figures for `npm run bench`: how many open SSE connections one web process holds and
 * what each costs in memory (a real `main.js web` child process, compiled and flagged as the
 * Procfile runs it, RSS from /proc) and in its CPU, and how long a token takes from the worker to
 * the browser (first delta and complete message, p50/p99).
 * Loopback only; bounded in count and time.
 */
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { clientMessageIdOf } from '../../channels/web/message-ids.js';
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/composition-root.js';
import { createLogger } from '../../src/logger.js';
import { createDeterministicModels } from '../support/deterministic-model.js';
import { startFakeTwilio } from '../support/fake-twilio.js';
import { TEST_ACCOUNT_SID, TEST_AUTH_TOKEN, testEnv } from '../support/harness.js';
import { findFreePort, startMongo, startRedis } from '../support/services.js';
import { cpuSeconds, mainEntry, productionNodeFlags } from './rig.js';
import { collectSse } from '../support/sse.js';

// Issue 29: one web process holds 5,000 event streams at ≤ 20 KiB each.
const CONNECTIONS = Number(process.env.BENCH_SSE_CONNECTIONS ?? 5000);
const BATCH = Math.max(1, Number(process.env.BENCH_SSE_BATCH ?? 250));
const TURNS = Number(process.env.BENCH_WIDGET_TURNS ?? 60);
const ORIGIN = 'https://shop.example.test';

const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))] ?? NaN;
const rssMiB = async (pid: number) => Number((await readFile(`/proc/${pid}/status`, 'utf8')).match(/VmRSS:\s+(\d+)/)?.[1] ?? 0) / 1024;

const redis = await startRedis();
const mongo = await startMongo();
const twilio = await startFakeTwilio({ accountSid: TEST_ACCOUNT_SID, authToken: TEST_AUTH_TOKEN });
process.env.TEST_REDIS_URL = redis.url;
process.env.TEST_MONGODB_URI = mongo.uri;
const sites = JSON.stringify([{ key: 'bench-site', name: 'Bench', origins: [ORIGIN] }]);
const env = testEnv(twilio.baseUrl, {
  WEB_SITES: sites,
  LOG_LEVEL: 'error',
  WEB_VISITOR_MESSAGES_PER_MINUTE: '100000',
  WEB_IP_MESSAGES_PER_MINUTE: '100000',
  WEB_VISITOR_REQUESTS_PER_MINUTE: '100000',
  WEB_IP_REQUESTS_PER_MINUTE: '100000',
  WEB_STREAMS_PER_VISITOR: '10',
});

async function session(base: string): Promise<string> {
  const response = await fetch(`${base}/api/widget/session`, {
    method: 'POST',
    headers: { origin: ORIGIN, 'content-type': 'application/json' },
    body: JSON.stringify({ siteKey: 'bench-site' }),
  });
  return ((await response.json()) as { token: string }).token;
}

// 1. Open SSE connections held by one web process, run with the node flags production gives the
// web process (the Procfile's `web:` line; BENCH_NODE_FLAGS adds more), then — when those flags
// cap V8's semi-spaces — once more without the cap, for what the cap saves and what it costs:
// the web process's CPU to open the streams, and per widget message posted while they are open
// (each message wakes its conversation's streams: BENCH_SSE_MESSAGES, 2,000 by default).
const MESSAGES = Number(process.env.BENCH_SSE_MESSAGES ?? 2000);
const productionFlags = [...(await productionNodeFlags('web')), ...(process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean)];
const SEMI_SPACE = /^--max-semi-space-size=/;
const runs = [productionFlags, ...(productionFlags.some((flag) => SEMI_SPACE.test(flag)) ? [productionFlags.filter((flag) => !SEMI_SPACE.test(flag))] : [])];

interface StreamsRun {
  flags: string[];
  open: number;
  before: number;
  after: number;
  openCpuMs: number;
  messageCpuMs: number;
}

async function holdStreams(webFlags: string[]): Promise<StreamsRun> {
  const port = await findFreePort();
  const web = spawn(process.execPath, [...webFlags, ...(await mainEntry()), 'web'], {
    env: { PATH: process.env.PATH ?? '', ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const webBase = `http://127.0.0.1:${port}`;
  for (let attempt = 0; attempt < 200; attempt += 1) {
    if (
      await fetch(`${webBase}/healthz`).then(
        (response) => response.ok,
        () => false,
      )
    )
      break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const tokens = await Promise.all(Array.from({ length: Math.ceil(CONNECTIONS / 10) }, () => session(webBase)));
  await new Promise((resolve) => setTimeout(resolve, 500));
  const before = await rssMiB(web.pid!);
  const cpuBeforeOpen = await cpuSeconds(web.pid);
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
  const open: http.ClientRequest[] = [];
  const openStream = (index: number) =>
    new Promise<void>((resolve, reject) => {
      const request = http.get(
        `${webBase}/api/widget/events?token=${encodeURIComponent(tokens[index % tokens.length]!)}`,
        { agent, headers: { origin: ORIGIN } },
        (response) => {
          response.once('data', () => resolve());
          response.on('error', () => undefined);
        },
      );
      request.on('error', reject);
      open.push(request);
    });
  // Opened BENCH_SSE_BATCH at a time (each batch once the last is open), as visitors arrive over
  // time; BENCH_SSE_BATCH=<CONNECTIONS> opens them all at once.
  for (let first = 0; first < CONNECTIONS; first += BATCH) {
    await Promise.all(Array.from({ length: Math.min(BATCH, CONNECTIONS - first) }, (_, offset) => openStream(first + offset)));
  }
  const openCpu = (await cpuSeconds(web.pid)) - cpuBeforeOpen;
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const after = await rssMiB(web.pid!);

  // Messages while the streams are open, 50 at a time (the web process's CPU, not the worker's: none runs here).
  const cpuBeforeMessages = await cpuSeconds(web.pid);
  let next = 0;
  await Promise.all(
    Array.from({ length: 50 }, async () => {
      for (let index = next++; index < MESSAGES; index = next++) {
        const response = await fetch(`${webBase}/api/widget/messages`, {
          method: 'POST',
          headers: { origin: ORIGIN, authorization: `Bearer ${tokens[index % tokens.length]!}`, 'content-type': 'application/json' },
          body: JSON.stringify({ clientMessageId: `bench-message-${index}`, text: 'opening hours?' }),
        });
        if (response.status !== 202) throw new Error(`a widget message was answered ${response.status}`);
        await response.arrayBuffer();
      }
    }),
  );
  const messageCpu = (await cpuSeconds(web.pid)) - cpuBeforeMessages;
  for (const request of open) request.destroy();
  const exited = new Promise((resolve) => web.once('exit', resolve));
  web.kill('SIGTERM');
  await exited;
  // The next run starts from the same empty Redis (this one's messages, inboxes and jobs gone).
  const admin = new Redis(redis.url);
  await admin.flushall();
  await admin.quit();
  return { flags: webFlags, open: open.length, before, after, openCpuMs: (1000 * openCpu) / open.length, messageCpuMs: (1000 * messageCpu) / MESSAGES };
}

const streamRuns: StreamsRun[] = [];
for (const flags of runs) streamRuns.push(await holdStreams(flags));

// 2. Worker-to-browser token latency (web + worker in this process, deterministic model).
const models = createDeterministicModels(() => ({ text: 'Our opening hours are nine to five, Monday to Friday, and ten to two on Saturdays.' }));
const services = await createServices(loadConfig(env), { models, logger: createLogger({ level: 'error', sink: () => undefined }) });
const worker = services.startWorker();
await worker.waitUntilReady();
const server = services.app.listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const transport = services.channels.get('web')!.transport;
const firstDeltaAt = new Map<string, number>();
const sentAt = new Map<string, number>();
const streamDelta = transport.streamDelta!.bind(transport);
const send = transport.send.bind(transport);
transport.streamDelta = (inbound, delta) => {
  // The service scopes the browser's message id by chat; the bench times by the browser's id.
  if (!firstDeltaAt.has(clientMessageIdOf(inbound.messageId))) firstDeltaAt.set(clientMessageIdOf(inbound.messageId), performance.now());
  streamDelta(inbound, delta);
};
transport.send = async (inbound, text, part) => {
  sentAt.set(clientMessageIdOf(inbound.messageId), performance.now());
  return send(inbound, text, part);
};
const firstToken: number[] = [];
const complete: number[] = [];
for (let turn = 0; turn < TURNS; turn += 1) {
  const token = await session(base);
  const clientMessageId = `bench-${turn}-${Date.now()}`;
  const received: Record<string, number> = {};
  const stream = collectSse(`${base}/api/widget/events?token=${encodeURIComponent(token)}`, {
    headers: { origin: ORIGIN },
    until: (events) => {
      const last = events.at(-1)!;
      received[last.event] ??= performance.now();
      return last.event === 'message';
    },
  });
  await new Promise((resolve) => setTimeout(resolve, 20));
  await fetch(`${base}/api/widget/messages`, {
    method: 'POST',
    headers: { origin: ORIGIN, authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ clientMessageId, text: 'opening hours?' }),
  });
  await stream;
  firstToken.push(received.delta! - firstDeltaAt.get(clientMessageId)!);
  complete.push(received.message! - sentAt.get(clientMessageId)!);
}

const row = (name: string, value: string) => console.log(`${name.padEnd(56)} ${value}`);
const ms = (values: number[]) => `${percentile(values, 50).toFixed(1)} / ${percentile(values, 99).toFixed(1)}`;
console.log('\nWidget benchmark (loopback; Redis stream + pub/sub; SSE over HTTP/1.1)');
for (const [index, run] of streamRuns.entries()) {
  row(`open SSE connections held by one web process (node ${process.version}, ${run.flags.join(' ')})`, `${run.open}`);
  if (index === 0 && streamRuns.length > 1) row('  (the flags the Procfile gives the web process; the next run: without the semi-space cap)', '');
  row('  web process RSS before / after (MiB)', `${run.before.toFixed(1)} / ${run.after.toFixed(1)}`);
  row(`  memory per open connection (KiB, opened ${Math.min(BATCH, CONNECTIONS)} at a time)`, (((run.after - run.before) * 1024) / run.open).toFixed(1));
  row('  web CPU per stream opened (ms)', run.openCpuMs.toFixed(2));
  row(`  web CPU per widget message with the streams open (ms, ${MESSAGES} messages)`, run.messageCpuMs.toFixed(2));
}
row(`worker → browser, first token p50 / p99 (ms, ${TURNS} turns; includes 40 ms delta coalescing)`, ms(firstToken));
row('worker → browser, complete message p50 / p99 (ms)', ms(complete));

server.close();
await services.mongo.dropDatabase();
await services.close();
await twilio.close();
await mongo.stop();
await redis.stop();
process.exit(0);
