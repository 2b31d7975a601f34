/**
 * `npm run bench:latency` (issue 26): what coalescing costs a customer. The WhatsApp and widget
 * pipelines (web and worker in this process, real Redis and FerretDB, the fake Twilio API) with
 * a deterministic model that takes a configurable time — the judge BENCH_JUDGE_MS (600), the
 * reply BENCH_REPLY_MS (1200) — run twice: with the quiet period (BENCH_COALESCE_MS, 1500, the
 * default) and with COALESCE_MS=0, side by side in this process (message for message, so load
 * from other work on the machine slows both alike). Per channel: the end-to-end p50/p90/p99 of single messages
 * (BENCH_SINGLES, 20, a new conversation each, 150 ms apart), the widget's first streamed text,
 * and for 3-message bursts (BENCH_BURSTS, 10, messages 300 ms apart) how many were answered by
 * exactly one reply, the turns started over per burst, and the time from the last message to
 * the answer. Printed as one table: each figure with the quiet period, without, and the
 * difference. Loopback only; about a minute.
 */
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../../src/config.js';
import { createServices, type Services } from '../../src/composition-root.js';
import { createLogger } from '../../src/logger.js';
import { clientMessageIdOf } from '../../channels/web/message-ids.js';
import { createDeterministicModels, keywordJudge } from '../support/deterministic-model.js';
import { testEnv } from '../support/harness.js';
import { openSse, type SseEvent } from '../support/sse.js';
import { benchNumber, percentile, sleep, startBacking, webhookSender } from './rig.js';

const JUDGE_MS = Number(process.env.BENCH_JUDGE_MS ?? 600);
const REPLY_MS = Number(process.env.BENCH_REPLY_MS ?? 1200);
const COALESCE_MS = Number(process.env.BENCH_COALESCE_MS ?? 1500);
const SINGLES = Number(process.env.BENCH_SINGLES ?? 20);
const BURSTS = Number(process.env.BENCH_BURSTS ?? 10);
const SINGLE_GAP_MS = 150;
const WARMUP = 3;
const BURST_GAP_MS = 300;
const ORIGIN = 'https://shop.example.test';
const REPLY_TEXT = 'Thanks for your message. Our opening hours are nine to five, Monday to Friday.';

interface RunFigures {
  whatsappSingle: number[];
  webFirstText: number[];
  webSingle: number[];
  whatsappBurst: BurstFigures;
  webBurst: BurstFigures;
}
interface BurstFigures {
  /** Replies per burst. */
  replies: number[];
  /** From the last message to the reply that answered it (ms). */
  lastToAnswer: number[];
  /** Turns started over, per burst. */
  restarts: number[];
}

const backing = await startBacking();
process.env.TEST_REDIS_URL = backing.redis.url;
process.env.TEST_MONGODB_URI = backing.mongoUri.replace(/\?.*$/, '');

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('bench: condition not met in time');
    await sleep(20);
  }
}

async function settled(services: Services): Promise<void> {
  await until(async () => Object.values(await services.queue.getJobCounts('active', 'wait', 'delayed', 'prioritized')).every((count) => count === 0));
}

async function run(coalesceMs: number, area: number): Promise<RunFigures> {
  const env = testEnv(backing.twilio.baseUrl, {
    NODE_ENV: 'production',
    LOG_LEVEL: 'info',
    COALESCE_MS: String(coalesceMs),
    TURN_LOCK_TTL_MS: '5000',
    WORKER_CONCURRENCY: '32',
    WEB_SITES: JSON.stringify([{ key: 'bench-site', name: 'Bench', origins: [ORIGIN] }]),
    WEB_VISITOR_MESSAGES_PER_MINUTE: '100000',
    WEB_IP_MESSAGES_PER_MINUTE: '100000',
    WEB_VISITOR_REQUESTS_PER_MINUTE: '100000',
    WEB_IP_REQUESTS_PER_MINUTE: '100000',
    WEB_STREAMS_PER_VISITOR: '10',
  });
  // Which conversations had a turn started over (only those lines are parsed).
  const restartsBy = new Map<string, number>();
  const logger = createLogger({
    level: 'info',
    sink: (line) => {
      // BENCH_LOG=1: warnings and errors on stderr.
      if (process.env.BENCH_LOG && /"level":"(warn|error)"/.test(line)) process.stderr.write(`${line}\n`);
      if (!line.includes('"turn-restarted"')) return;
      const key = (JSON.parse(line) as { conversationKey?: string }).conversationKey ?? '';
      restartsBy.set(key, (restartsBy.get(key) ?? 0) + 1);
    },
  });
  const models = createDeterministicModels(
    () => ({ text: REPLY_TEXT, delayMs: REPLY_MS }),
    async (call) => ({ ...(await keywordJudge(call)), delayMs: JUDGE_MS }),
  );
  const services = await createServices(loadConfig(env), { models, logger, queuePrefix: `{bench-latency-${randomUUID().slice(0, 8)}}` });
  const worker = services.startWorker();
  await worker.waitUntilReady();
  const server = services.app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const port = (server.address() as AddressInfo).port;
  const base = `http://127.0.0.1:${port}`;
  const webhook = webhookSender(port);
  const repliesTo = (to: string) => backing.twilio.messages.filter((message) => message.to === to);

  // WhatsApp, single messages: webhook → reply at the fake Twilio API.
  const whatsappOnce = async (from: string, text: string) => {
    const sentAt = Date.now();
    await webhook.post(from, text);
    await until(() => repliesTo(from).length > 0);
    return repliesTo(from)[0]!.receivedAt - sentAt;
  };
  // Warm-up, not counted: the first turns of a process pay for loading code, scripts and connections.
  await Promise.all(Array.from({ length: WARMUP }, (_, index) => whatsappOnce(benchNumber(area + 2, index), `warm-up ${index}`)));
  await settled(services);
  const whatsappSingle = await Promise.all(
    Array.from({ length: SINGLES }, async (_, index) => {
      await sleep(index * SINGLE_GAP_MS);
      return whatsappOnce(benchNumber(area, index), `single ${index}`);
    }),
  );
  await settled(services);

  const session = async (): Promise<string> => {
    const response = await fetch(`${base}/api/widget/session`, {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'application/json' },
      body: JSON.stringify({ siteKey: 'bench-site' }),
    });
    return ((await response.json()) as { token: string }).token;
  };
  const postWidget = async (token: string, clientMessageId: string, text: string) => {
    const response = await fetch(`${base}/api/widget/messages`, {
      method: 'POST',
      headers: { origin: ORIGIN, authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ clientMessageId, text }),
    });
    if (response.status !== 202) throw new Error(`widget message answered ${response.status}: ${await response.text()}`);
  };
  /** Opens the visitor's event stream; resolves with the time each event arrived once `messages` complete messages did. */
  const stream = async (token: string, messages: number, timeoutMs: number) => {
    const arrived: { event: SseEvent; at: number }[] = [];
    const opened = await openSse(`${base}/api/widget/events?token=${encodeURIComponent(token)}`, {
      headers: { origin: ORIGIN },
      timeoutMs,
      until: (events) => {
        arrived.push({ event: events.at(-1)!, at: Date.now() });
        return events.filter((event) => event.event === 'message').length >= messages;
      },
    });
    return { done: opened.events.then(() => arrived) };
  };

  // Widget, single messages: post → first streamed text, and → complete message.
  const widgetOnce = async (index: number) => {
    const token = await session();
    const events = await stream(token, 1, 30_000);
    const sentAt = Date.now();
    await postWidget(token, `single-${index}-${Date.now()}`, `single ${index}`);
    const arrived = await events.done;
    const first = arrived.find(({ event }) => event.event === 'delta' || event.event === 'message')!;
    const complete = arrived.find(({ event }) => event.event === 'message')!;
    return { firstText: first.at - sentAt, complete: complete.at - sentAt };
  };
  await Promise.all(Array.from({ length: WARMUP }, (_, index) => widgetOnce(-1 - index)));
  await settled(services);
  const webSingles = await Promise.all(
    Array.from({ length: SINGLES }, async (_, index) => {
      await sleep(index * SINGLE_GAP_MS);
      return widgetOnce(index);
    }),
  );
  await settled(services);

  const quietAfter = async (replies: () => number) => {
    // A burst is over once its queue work is done and no reply arrived for a while.
    let count = replies();
    await settled(services);
    for (;;) {
      await sleep(500);
      await settled(services);
      if (replies() === count) return;
      count = replies();
    }
  };

  // WhatsApp bursts: three messages 300 ms apart; replies per burst, last message → answer.
  const whatsappBursts = await Promise.all(
    Array.from({ length: BURSTS }, async (_, index) => {
      await sleep(index * 100);
      const from = benchNumber(area + 1, index);
      let lastAt = 0;
      for (const [position, text] of ['hi', 'I need', 'my March invoice'].entries()) {
        if (position > 0) await sleep(BURST_GAP_MS);
        lastAt = Date.now();
        await webhook.post(from, text, undefined);
      }
      await until(() => repliesTo(from).length > 0);
      return { from, lastAt };
    }),
  );
  const burstNumbers = new Set(whatsappBursts.map((burst) => burst.from));
  await quietAfter(() => backing.twilio.messages.filter((message) => burstNumbers.has(message.to)).length);
  const whatsappBurst: BurstFigures = { replies: [], lastToAnswer: [], restarts: [] };
  for (const { from, lastAt } of whatsappBursts) {
    const replies = repliesTo(from);
    whatsappBurst.replies.push(replies.length);
    whatsappBurst.lastToAnswer.push(replies.at(-1)!.receivedAt - lastAt);
    whatsappBurst.restarts.push(restartsBy.get(from) ?? 0);
  }

  // Widget bursts, the same.
  const webBursts = await Promise.all(
    Array.from({ length: BURSTS }, async (_, index) => {
      await sleep(index * 100);
      const token = await session();
      const arrived: { event: SseEvent; at: number }[] = [];
      // Read until the run ends (its connections are closed then).
      const opened = await openSse(`${base}/api/widget/events?token=${encodeURIComponent(token)}`, {
        headers: { origin: ORIGIN },
        timeoutMs: 120_000,
        until: (received) => {
          arrived.push({ event: received.at(-1)!, at: Date.now() });
          return false;
        },
      });
      void opened.events.catch(() => undefined);
      let lastAt = 0;
      let lastId = '';
      for (const [position, text] of ['hi', 'I need', 'my March invoice'].entries()) {
        if (position > 0) await sleep(BURST_GAP_MS);
        lastAt = Date.now();
        lastId = `burst-${index}-${position}-${Date.now()}`;
        await postWidget(token, lastId, text);
      }
      return { arrived, lastAt, lastId };
    }),
  );
  await quietAfter(() => webBursts.reduce((sum, burst) => sum + burst.arrived.filter(({ event }) => event.event === 'message').length, 0));
  const webBurst: BurstFigures = { replies: [], lastToAnswer: [], restarts: [] };
  for (const burst of webBursts) {
    const messages = burst.arrived.filter(({ event }) => event.event === 'message');
    webBurst.replies.push(messages.length);
    const answer = messages.find(({ event }) => clientMessageIdOf(String((event.data as { replyTo?: string }).replyTo ?? '')) === burst.lastId);
    webBurst.lastToAnswer.push((answer ?? messages.at(-1))!.at - burst.lastAt);
  }
  webBurst.restarts = [...restartsBy.entries()].filter(([key]) => key.startsWith('web:')).map(([, count]) => count);
  while (webBurst.restarts.length < BURSTS) webBurst.restarts.push(0);

  server.closeAllConnections();
  server.close();
  await services.close();
  return {
    whatsappSingle,
    webFirstText: webSingles.map((single) => single.firstText),
    webSingle: webSingles.map((single) => single.complete),
    whatsappBurst,
    webBurst,
  };
}

// Both configurations at once, message for message, so a machine shared with other work slows both alike.
const [eager, none] = await Promise.all([run(COALESCE_MS, 201), run(0, 211)]);

const p = (values: number[], q: number) => percentile(values, q);
const fmt = (value: number) => `${Math.round(value)}`;
const diff = (a: number, b: number) => `${a - b >= 0 ? '+' : ''}${Math.round(a - b)}`;
const rows: [string, string, string, string][] = [];
const percentiles = (name: string, a: number[], b: number[]) => {
  for (const q of [50, 90, 99]) rows.push([`${name} p${q} (ms)`, fmt(p(a, q)), fmt(p(b, q)), diff(p(a, q), p(b, q))]);
};
const bursts = (name: string, a: BurstFigures, b: BurstFigures) => {
  const one = (figures: BurstFigures) => figures.replies.filter((count) => count === 1).length;
  rows.push([`${name} 3-message bursts answered by exactly one reply`, `${one(a)} of ${BURSTS}`, `${one(b)} of ${BURSTS}`, '']);
  const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / Math.max(1, values.length);
  rows.push([`${name} replies per burst (mean)`, mean(a.replies).toFixed(1), mean(b.replies).toFixed(1), '']);
  rows.push([
    `${name} turns started over per burst (max / total)`,
    `${Math.max(0, ...a.restarts)} / ${a.restarts.reduce((s, v) => s + v, 0)}`,
    `${Math.max(0, ...b.restarts)} / ${b.restarts.reduce((s, v) => s + v, 0)}`,
    '',
  ]);
  for (const q of [50, 90])
    rows.push([
      `${name} burst, last message → answer p${q} (ms)`,
      fmt(p(a.lastToAnswer, q)),
      fmt(p(b.lastToAnswer, q)),
      diff(p(a.lastToAnswer, q), p(b.lastToAnswer, q)),
    ]);
};
percentiles('WhatsApp single, webhook → reply', eager.whatsappSingle, none.whatsappSingle);
percentiles('widget single, message → first text', eager.webFirstText, none.webFirstText);
percentiles('widget single, message → complete reply', eager.webSingle, none.webSingle);
bursts('WhatsApp', eager.whatsappBurst, none.whatsappBurst);
bursts('widget', eager.webBurst, none.webBurst);

const widths = [Math.max(...rows.map((row) => row[0].length)), 16, 14, 10];
const line = (cells: readonly string[]) => cells.map((cell, index) => (index === 0 ? cell.padEnd(widths[0]!) : cell.padStart(widths[index]!))).join('  ');
console.log(
  `\nLatency bench (issue 26): model judge ${JUDGE_MS} ms + reply ${REPLY_MS} ms; ${SINGLES} single messages and ${BURSTS} bursts per channel; Node ${process.version}`,
);
console.log(line(['figure', `COALESCE_MS=${COALESCE_MS}`, 'COALESCE_MS=0', 'difference']));
console.log(line(widths.map((width) => '-'.repeat(width))));
for (const row of rows) console.log(line(row));

await backing.stop();
process.exit(0);
