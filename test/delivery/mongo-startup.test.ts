/**
 * A service started while MongoDB is down: the web and worker processes (each its own process,
 * as in production) start, `/readyz` says MongoDB is `degraded` (200: the service serves), and a
 * WhatsApp customer gets their answer — a turn needs nothing from MongoDB. Once MongoDB is back
 * (restarted after being stopped; separately, thawed after being frozen), the message and the
 * reply land in it, its indexes are created, and readiness says `ready`. A worker that starts
 * during the outage still queues the hand-off notices a crash left pending, once MongoDB is back.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from '@jest/globals';
import type { Connection } from 'mongoose';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { connectMongo, inboundMessageId, outboundMessageId } from '../../src/store/transcript-store.js';
import { startFakeTwilio } from '../support/fake-twilio.js';
import {
  eventually,
  newMessageSid,
  ownRedisDatabase,
  PUBLIC_BASE_URL,
  startHarness,
  startServiceProcess,
  TEST_ACCOUNT_SID,
  TEST_AUTH_TOKEN,
  TEST_SENDER,
  testEnv,
  type FakeTwilio,
  type Harness,
  type ServiceProcess,
} from '../support/harness.js';
import { startOpenAIStub, type OpenAIStub } from '../support/openai-stub.js';
import { findFreePort, startRestartableFerretDb, type RestartableMongoHandle } from '../support/services.js';
import { handoffsSettled } from '../support/settled.js';
import { openStrandedHandoff } from '../support/stranded-handoff.js';
import { stubAssistant } from '../support/stub-assistant.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';
import { inboundWhatsappParams, signTwilioRequest } from '../support/twilio-signature.js';

const ANSWER = 'We are open from nine to five.';

let stub: OpenAIStub;
let twilio: FakeTwilio;
beforeAll(async () => {
  stub = await startOpenAIStub();
  stub.respondWith((body) => (body.response_format?.json_schema ? stubAssistant(body) : { text: ANSWER }));
  twilio = await startFakeTwilio({ accountSid: TEST_ACCOUNT_SID, authToken: TEST_AUTH_TOKEN });
});
afterAll(async () => {
  await stub.close();
  await twilio.close();
});

interface Running {
  database: RestartableMongoHandle;
  processes: ServiceProcess[];
  base: string;
  mongo?: Connection;
}
let running: Running | undefined;
afterEach(async () => {
  if (!running) return;
  running.database.resume();
  await Promise.all(running.processes.map((service) => service.kill()));
  await running.mongo?.dropDatabase().catch(() => undefined);
  await running.mongo?.close();
  await running.database.stop();
  running = undefined;
});

/** Starts web and worker processes against `database` while `down()` keeps it from answering. */
async function startWhileDown(
  name: string,
  down: (database: RestartableMongoHandle) => Promise<void> | void,
): Promise<Running & { env: Record<string, string> }> {
  const database = await startRestartableFerretDb();
  running = { database, processes: [], base: '' };
  await down(database);
  const port = await findFreePort();
  const env = testEnv(twilio.baseUrl, { PORT: String(port), OPENAI_BASE_URL: stub.baseUrl, MONGODB_URI: `${database.uri}${name}`, ...ownRedisDatabase(4) });
  const [web, worker] = await Promise.all([startServiceProcess(env, 'web'), startServiceProcess(env, 'worker')]);
  running.processes.push(web, worker);
  running.base = `http://127.0.0.1:${port}`;
  return { ...running, env };
}

async function sendWhatsapp(base: string, from: string, body: string, messageSid: string): Promise<number> {
  const params = inboundWhatsappParams({ accountSid: TEST_ACCOUNT_SID, from, to: TEST_SENDER, body, messageSid });
  const response = await fetch(`${base}/webhooks/whatsapp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': signTwilioRequest(TEST_AUTH_TOKEN, `${PUBLIC_BASE_URL}/webhooks/whatsapp`, params),
    },
    body: new URLSearchParams(params).toString(),
  });
  return response.status;
}

const readiness = async (base: string) => {
  const response = await fetch(`${base}/readyz`);
  return { status: response.status, body: (await response.json()) as unknown };
};

/** The customer is answered while MongoDB is down; once it is back every record and index lands. */
async function answeredThenRecorded(
  name: string,
  customer: string,
  down: (database: RestartableMongoHandle) => Promise<void> | void,
  up: (database: RestartableMongoHandle) => Promise<void> | void,
) {
  const { database, base, env } = await startWhileDown(name, down);
  expect(await readiness(base)).toEqual({ status: 200, body: { status: 'degraded', checks: { redis: 'ok', mongodb: 'degraded' } } });

  const messageSid = newMessageSid();
  expect(await sendWhatsapp(base, customer, 'when are you open?', messageSid)).toBe(200);
  const reply = await eventually(() => twilio.messages.find((message) => message.to === customer), 30_000);
  expect(reply.body).toBe(ANSWER);

  await up(database);
  const mongo = await connectMongo(env.MONGODB_URI!);
  running!.mongo = mongo;
  const stored = await eventually(async () => {
    const found = await mongo
      .collection('messages')
      .find({ _id: { $in: [inboundMessageId('whatsapp', messageSid), outboundMessageId('whatsapp', messageSid, 0)] as never[] } })
      .toArray();
    return found.length === 2 ? found : undefined;
  }, 60_000);
  expect(stored.map((message) => [message.direction, message.text]).sort()).toEqual([
    ['inbound', 'when are you open?'],
    ['outbound', ANSWER],
  ]);
  expect(await mongo.collection('conversations').findOne({ _id: conversationKeyFor(customer) as never })).toMatchObject({ channel: 'whatsapp' });
  // The indexes start-up used to create before serving exist now.
  await eventually(async () => {
    const indexes = (await mongo.collection('messages').listIndexes().toArray()).map((index) => index.name as string);
    return indexes.includes('conversationId_1_createdAt_1__id_1') || undefined;
  }, 30_000);
  const ready = { status: 200, body: { status: 'ready', checks: { redis: 'ok', mongodb: 'ok' } } };
  await eventually(async () => JSON.stringify(await readiness(base)) === JSON.stringify(ready) || undefined, 30_000);
}

describe('a service started while MongoDB is down', () => {
  test('stopped: web and worker start, the customer is answered, and everything lands once MongoDB is restarted', async () => {
    await answeredThenRecorded(
      'startup_stopped',
      'whatsapp:+447700915001',
      (database) => database.kill(),
      (database) => database.restart(),
    );
  }, 120_000);

  test('frozen: web and worker start, the customer is answered, and everything lands once MongoDB thaws', async () => {
    await answeredThenRecorded(
      'startup_frozen',
      'whatsapp:+447700915002',
      (database) => database.pause(),
      (database) => database.resume(),
    );
  }, 120_000);
});

describe('a worker started while MongoDB is down', () => {
  test('still queues the hand-off notices a crash left pending, once MongoDB is back', async () => {
    const database = await startRestartableFerretDb();
    const receiver = await startWebhookReceiver();
    const teamsJson = JSON.stringify({ sales: { label: 'Sales team', whatsapp: [SALES_PHONE], webhooks: [receiver.url('/sales')] } });
    const env = { MONGODB_URI: `${database.uri}startup_notices`, HANDOFF_TEAMS: teamsJson, NOTICE_BACKOFF_MS: '20' };
    let restarted: Harness | undefined;
    try {
      // A process opened a hand-off and died before queuing its notices.
      const before = await startHarness({ worker: false, twilio, env });
      await expect(openStrandedHandoff(before, teamsJson, 'whatsapp:+447700915101')).rejects.toThrow('process killed');
      await before.services.close();

      // The worker restarts while MongoDB is down, and stays up past mongoose's 10 s buffering.
      await database.kill();
      restarted = await startHarness({ twilio, env });
      const logs = restarted.logs;
      await eventually(() => logs.some((line) => line.event === 'mongodb-connect-retrying' && Number(line.attempts) >= 3) || undefined, 60_000);
      await database.restart();

      await eventually(() => twilio.messages.some((message) => message.to === SALES_PHONE) || undefined, 30_000);
      await eventually(() => receiver.received.length > 0 || undefined);
      await handoffsSettled(restarted.services);
      expect(twilio.messages.filter((message) => message.to === SALES_PHONE).map((message) => message.body)).toEqual([
        expect.stringContaining('Demo of the Pro plan for a team of 12'),
      ]);
      expect(receiver.received).toHaveLength(1);
      expect(logs.filter((line) => line.event === 'handoff-notice-recovery-failed')).toEqual([]);
    } finally {
      database.resume();
      await restarted?.close();
      await receiver.close();
      await database.stop();
    }
  }, 150_000);
});

const SALES_PHONE = 'whatsapp:+34600000951';
