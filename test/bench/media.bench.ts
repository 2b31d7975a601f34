/**
 * `npm run bench:media`: the extra latency a WhatsApp voice note adds through the pipeline, model
 * time excluded. Real web server and worker (real Redis and FerretDB), the fake Twilio API
 * serving the note behind basic auth and a redirect, the OpenAI-compatible stub transcribing it
 * at once, the deterministic model answering at once. Text messages and voice notes alternate,
 * one at a time (no queueing), each from its own number; the figure is the difference of their
 * webhook-to-reply times: the worker's fetch (auth, redirect, download), the GridFS write, the
 * transcription request's round trip (upload included, the stub's own time ≈ 0) and the media
 * reference on the transcript. Loopback only; bounded in count.
 */
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../../src/config.js';
import { createServices } from '../../src/composition-root.js';
import { createLogger } from '../../src/logger.js';
import { createDeterministicModels } from '../support/deterministic-model.js';
import { startFakeTwilio } from '../support/fake-twilio.js';
import { PUBLIC_BASE_URL, TEST_ACCOUNT_SID, TEST_AUTH_TOKEN, TEST_SENDER, testEnv } from '../support/harness.js';
import { OGG_BYTES } from '../support/media-fixtures.js';
import { startOpenAIStub } from '../support/openai-stub.js';
import { startMongo, startRedis } from '../support/services.js';
import { inboundWhatsappParams, newTwilioSid, signedWebhook } from '../support/twilio-signature.js';

const PAIRS = Number(process.env.BENCH_MEDIA_PAIRS ?? 40);
/** About 30 seconds of WhatsApp Opus (16 kbit/s). */
const VOICE_NOTE_BYTES = Number(process.env.BENCH_VOICE_NOTE_BYTES ?? 60 * 1024);

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

const redisServer = await startRedis();
const mongoServer = await startMongo();
const twilio = await startFakeTwilio({ accountSid: TEST_ACCOUNT_SID, authToken: TEST_AUTH_TOKEN });
const stub = await startOpenAIStub();
process.env.TEST_REDIS_URL = redisServer.url;
process.env.TEST_MONGODB_URI = mongoServer.uri;

const models = createDeterministicModels(() => ({ text: 'ok' }));
const config = loadConfig(testEnv(twilio.baseUrl, { LOG_LEVEL: 'error', OPENAI_BASE_URL: stub.baseUrl }));
// The worker logs each message's media step (fetch, store, transcription) as `media-prepared` with its `ms`.
const mediaStepMs: number[] = [];
const logger = createLogger({
  level: 'info',
  sink: (line) => {
    if (line.includes('"event":"media-prepared"')) mediaStepMs.push((JSON.parse(line) as { ms: number }).ms);
  },
});
const services = await createServices(config, { models, logger });
const worker = services.startWorker();
await worker.waitUntilReady();
const server = services.app.listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const port = (server.address() as AddressInfo).port;
const note = Buffer.concat([OGG_BYTES, Buffer.alloc(Math.max(0, VOICE_NOTE_BYTES - OGG_BYTES.length), 7)]);

let sent = 0;
/** Posts one message and resolves with the milliseconds until its reply reached Twilio. */
async function roundTrip(voice: boolean): Promise<number> {
  const from = `whatsapp:+1777${String(sent++).padStart(7, '0')}`;
  const media = voice ? [{ url: twilio.addMedia({ body: note, contentType: 'audio/ogg' }), contentType: 'audio/ogg' }] : [];
  const params = inboundWhatsappParams({ accountSid: TEST_ACCOUNT_SID, from, to: TEST_SENDER, body: voice ? '' : 'hello', messageSid: newTwilioSid(), media });
  const before = twilio.messages.length;
  const started = Date.now();
  const response = await fetch(`http://127.0.0.1:${port}/webhooks/whatsapp`, {
    method: 'POST',
    ...signedWebhook(TEST_AUTH_TOKEN, `${PUBLIC_BASE_URL}/webhooks/whatsapp`, params),
  });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`webhook answered ${response.status}`);
  const replies = await twilio.waitForMessages(before + 1, 30_000);
  const reply = replies.find((message) => message.to === from);
  if (!reply) throw new Error(`no reply to ${from}`);
  return reply.receivedAt - started;
}

// Warm-up: connections, indexes and the GridFS bucket exist before measuring.
await roundTrip(false);
await roundTrip(true);
mediaStepMs.length = 0;
const text: number[] = [];
const voice: number[] = [];
for (let index = 0; index < PAIRS; index += 1) {
  text.push(await roundTrip(false));
  voice.push(await roundTrip(true));
}
if (stub.transcriptions.length !== PAIRS + 1) throw new Error(`expected ${PAIRS + 1} transcriptions, got ${stub.transcriptions.length}`);

const row = (name: string, value: string) => console.log(`${name.padEnd(60)} ${value}`);
const ms = (values: number[]) => `${percentile(values, 50).toFixed(1)} / ${percentile(values, 99).toFixed(1)}`;
console.log(`\nVoice-note latency benchmark (web + worker in one process, Redis, FerretDB/SQLite, fake Twilio media, stub transcription, deterministic model)`);
row(`${PAIRS} text messages, webhook → reply p50 / p99 (ms)`, ms(text));
row(`${PAIRS} voice notes of ${(VOICE_NOTE_BYTES / 1024).toFixed(0)} KiB, webhook → reply p50 / p99 (ms)`, ms(voice));
row('voice note extra latency p50 (ms, model time excluded)', (percentile(voice, 50) - percentile(text, 50)).toFixed(1));
row("  the worker's media step p50 / p99 (ms: fetch, GridFS, transcription round trip)", ms(mediaStepMs));

server.close();
await services.mongo.dropDatabase();
await services.close();
await twilio.close();
await stub.close();
await mongoServer.stop();
await redisServer.stop();
process.exit(0);
