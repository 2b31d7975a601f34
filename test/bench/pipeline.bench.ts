/**
 * `npm run bench`: drives signed WhatsApp webhooks from many numbers through a real web
 * server and worker (real Redis and FerretDB, the fake Twilio API, the deterministic model with
 * no delay) and prints throughput, webhook ack latency, pipeline overhead, and Redis commands
 * and MongoDB operations per turn. Loopback only; bounded in count and time.
 */
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import mongoose from 'mongoose';
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/composition-root.js';
import { createLogger } from '../../src/logger.js';
import { createDeterministicModels } from '../support/deterministic-model.js';
import { startFakeTwilio } from '../support/fake-twilio.js';
import { PUBLIC_BASE_URL, TEST_ACCOUNT_SID, TEST_AUTH_TOKEN, TEST_SENDER, testEnv } from '../support/harness.js';
import { startMongo, startRedis } from '../support/services.js';
import { inboundWhatsappParams, newTwilioSid, signedWebhook } from '../support/twilio-signature.js';

const NUMBERS = Number(process.env.BENCH_NUMBERS ?? 60);
const MESSAGES_PER_NUMBER = Number(process.env.BENCH_MESSAGES_PER_NUMBER ?? 3);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const TIME_LIMIT_MS = 120_000;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

async function totalCommands(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  let total = 0;
  for (const match of info.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)) if (match[1] !== 'info') total += Number(match[2]);
  return total;
}

// Every operation mongoose sends (reads, writes, bulk writes): MongoDB round trips, near enough.
let mongoOperations = 0;
mongoose.set('debug', () => {
  mongoOperations += 1;
});

const redisServer = await startRedis();
const mongoServer = await startMongo();
const twilio = await startFakeTwilio({ accountSid: TEST_ACCOUNT_SID, authToken: TEST_AUTH_TOKEN });
process.env.TEST_REDIS_URL = redisServer.url;
process.env.TEST_MONGODB_URI = mongoServer.uri;

const modelTime = new Map<string, number>();
const models = createDeterministicModels(({ userText }) => {
  const started = performance.now();
  const reply = { text: `ok ${userText}` };
  modelTime.set(userText, performance.now() - started);
  return reply;
});
const config = loadConfig(testEnv(twilio.baseUrl, { WORKER_CONCURRENCY: String(CONCURRENCY), LOG_LEVEL: 'error' }));
const services = await createServices(config, { models, logger: createLogger({ level: 'error', sink: () => undefined }) });
const worker = services.startWorker();
await worker.waitUntilReady();
const server = services.app.listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const port = (server.address() as AddressInfo).port;
const probe = new Redis(redisServer.url);

// Warm-up: one turn, so connections and indexes exist before measuring.
const sentAt = new Map<string, number>();
async function post(from: string, body: string): Promise<number> {
  const params = inboundWhatsappParams({ accountSid: TEST_ACCOUNT_SID, from, to: TEST_SENDER, body, messageSid: newTwilioSid() });
  const started = performance.now();
  sentAt.set(`ok ${body}`, Date.now());
  const response = await fetch(`http://127.0.0.1:${port}/webhooks/whatsapp`, {
    method: 'POST',
    ...signedWebhook(TEST_AUTH_TOKEN, `${PUBLIC_BASE_URL}/webhooks/whatsapp`, params),
  });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`webhook answered ${response.status}`);
  return performance.now() - started;
}
await post('whatsapp:+19990000000', 'warm-up');
await twilio.waitForMessages(1, 10_000);
twilio.reset();
sentAt.clear();

// Phase 1 — throughput: every sender as fast as the webhook acknowledges.
const total = NUMBERS * MESSAGES_PER_NUMBER;
const commandsBefore = await totalCommands(probe);
const mongoBefore = mongoOperations;
const started = performance.now();
const burstAcks: number[] = [];
// Each number sends its messages in order; up to CONCURRENCY numbers are sending at once.
let nextNumber = 0;
await Promise.all(
  Array.from({ length: CONCURRENCY }, async () => {
    while (nextNumber < NUMBERS) {
      const number = `whatsapp:+1999${String(nextNumber++).padStart(7, '0')}`;
      for (let index = 0; index < MESSAGES_PER_NUMBER; index += 1) burstAcks.push(await post(number, `${number} #${index}`));
    }
  }),
);
const burstReplies = await twilio.waitForMessages(total, TIME_LIMIT_MS);
const throughput = total / ((performance.now() - started) / 1000);
await new Promise((resolve) => setTimeout(resolve, 300));
const commands = (await totalCommands(probe)) - commandsBefore;
const mongoPerTurn = (mongoOperations - mongoBefore) / total;

// Phase 2 — latency: a steady rate well under the measured throughput, one number per message.
twilio.reset();
sentAt.clear();
const rate = Math.max(1, Math.floor(throughput * 0.4));
const pacedCount = Math.min(200, rate * 15);
const pacedAcks: number[] = [];
const pacedStart = performance.now();
const pending: Promise<void>[] = [];
for (let index = 0; index < pacedCount; index += 1) {
  const due = pacedStart + (index * 1000) / rate;
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - performance.now())));
  pending.push(post(`whatsapp:+1888${String(index).padStart(7, '0')}`, `paced ${index}`).then((ms) => void pacedAcks.push(ms)));
}
await Promise.all(pending);
const pacedReplies = await twilio.waitForMessages(pacedCount, TIME_LIMIT_MS);
const overheads = pacedReplies.map((reply) => reply.receivedAt - (sentAt.get(reply.body) ?? reply.receivedAt) - (modelTime.get(reply.body.slice(3)) ?? 0));

const row = (name: string, value: string) => console.log(`${name.padEnd(52)} ${value}`);
const ms = (values: number[]) => `${percentile(values, 50).toFixed(1)} / ${percentile(values, 99).toFixed(1)}`;
console.log(
  `\nWhatsApp pipeline benchmark (web + worker in one process, Redis, ${process.env.MONGODB_URI ? 'MONGODB_URI' : 'FerretDB/SQLite'}, fake Twilio, deterministic model)`,
);
row(`burst: ${NUMBERS} numbers × ${MESSAGES_PER_NUMBER} messages, ${CONCURRENCY} senders`, `${burstReplies.length}/${total} answered`);
row('  messages/s sustained (webhook in → Twilio send)', throughput.toFixed(1));
row('  webhook ack latency p50 / p99 (ms)', ms(burstAcks));
row('  Redis commands per turn (web + BullMQ + worker)', (commands / total).toFixed(1));
row('  MongoDB operations per turn (mongoose)', mongoPerTurn.toFixed(1));
row('  jobs that found their conversation locked', String(services.metrics.value('turn_lock_busy_total')));
row(`paced: ${pacedCount} messages at ${rate}/s`, `${pacedReplies.length}/${pacedCount} answered`);
row('  webhook ack latency p50 / p99 (ms)', ms(pacedAcks));
row('  pipeline overhead p50 / p99 (ms, model excluded)', ms(overheads));

server.close();
await probe.quit();
await services.mongo.dropDatabase();
await services.close();
await twilio.close();
await mongoServer.stop();
await redisServer.stop();
process.exit(0);
