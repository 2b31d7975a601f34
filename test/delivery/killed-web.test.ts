/**
 * A web process that appended a customer's message to its conversation's inbox and died before
 * the message's turn job existed. Here the job's add fails (BullMQ's id counter is made
 * unusable): the customer's webhook is answered 200 (the message is in its inbox and noted), and
 * the web process is killed (SIGKILL) with its background retries of the add. The message is left
 * in Redis, with no job. A worker started afterwards must still answer it, once: the intake
 * ledger's note of it outlived the process, and the worker's sweeper adds the job.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { conversationKeyFor } from '../../channels/whatsapp/webhook.js';
import { createServices, type Services } from '../../src/composition-root.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { logIdOf } from '../../src/logger-privacy.js';
import { createIntakeLedger } from '../../src/queue/intake-ledger.js';
import { createRedis, QUEUE_PREFIX, type RedisClient } from '../../src/redis.js';
import { redisKeys } from '../../src/queue/keys.js';
import { TURN_QUEUE_NAME } from '../../src/queue/turn-queue.js';
import { inboundMessageId } from '../../src/store/transcript-store.js';
import { createDeterministicModels } from '../support/deterministic-model.js';
import { startFakeTwilio, type FakeTwilio } from '../support/fake-twilio.js';
import {
  eventually,
  newMessageSid,
  ownRedisDatabase,
  PUBLIC_BASE_URL,
  startServiceProcess,
  TEST_ACCOUNT_SID,
  TEST_AUTH_TOKEN,
  TEST_SENDER,
  testEnv,
  type LogLine,
} from '../support/harness.js';
import { findFreePort } from '../support/services.js';
import { transcriptsWritten } from '../support/settled.js';
import { inboundWhatsappParams, signTwilioRequest } from '../support/twilio-signature.js';

const customer = 'whatsapp:+447700932001';
let twilio: FakeTwilio;
let redis: RedisClient;
let services: Services | undefined;
beforeAll(async () => {
  twilio = await startFakeTwilio({ accountSid: TEST_ACCOUNT_SID, authToken: TEST_AUTH_TOKEN });
});
afterAll(async () => {
  await services?.mongo.dropDatabase().catch(() => undefined);
  await services?.close();
  await redis?.quit();
  await twilio.close();
});

test('a message its web process appended and died before queuing is answered once, by the sweeper', async () => {
  const port = await findFreePort();
  // Its own Redis database: the web process uses the production queue prefix.
  const env = testEnv(twilio.baseUrl, { PORT: String(port), ...ownRedisDatabase(5) });
  const config = loadConfig(env);
  redis = createRedis(config);
  const web = await startServiceProcess(env, 'web');
  // Every add of a turn job fails from now on: BullMQ's id counter holds no number.
  const counter = `${QUEUE_PREFIX}:${TURN_QUEUE_NAME}:id`;
  const counted = await redis.get(counter);
  await redis.set(counter, 'not-a-number');

  const messageSid = newMessageSid();
  const params = inboundWhatsappParams({ accountSid: TEST_ACCOUNT_SID, from: customer, to: TEST_SENDER, body: 'are you open on Sunday?', messageSid });
  const response = await fetch(`http://127.0.0.1:${port}/webhooks/whatsapp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': signTwilioRequest(TEST_AUTH_TOKEN, `${PUBLIC_BASE_URL}/webhooks/whatsapp`, params),
    },
    body: new URLSearchParams(params).toString(),
  });
  expect(response.status).toBe(200);
  // Its add was tried (and failed) before the process dies.
  await eventually(() => (web.output().includes('turn-enqueue-retrying') ? true : undefined), 10_000);
  await web.kill();
  if (counted === null) await redis.del(counter);
  else await redis.set(counter, counted);
  // What the dead process left: the message in its inbox, and no job.
  expect(await redis.llen(redisKeys.inbox(conversationKeyFor(customer)))).toBe(1);
  expect(await redis.exists(`${QUEUE_PREFIX}:${TURN_QUEUE_NAME}:${`${conversationKeyFor(customer)}|${messageSid}`.replace(/:/g, '_')}`)).toBe(0);

  const logs: LogLine[] = [];
  services = await createServices(config, {
    models: createDeterministicModels(({ userText }) => ({ text: `Answer to: ${userText}` })),
    logger: createLogger({ level: 'info', sink: (line) => logs.push(JSON.parse(line) as LogLine) }),
    intakeSweep: { intervalMs: 100, staleMs: 500 },
  });
  await services.startWorker().waitUntilReady();
  const received = () => twilio.messages.filter((message) => message.to === customer).map((message) => message.body);
  await eventually(() => (received().length > 0 ? true : undefined), 20_000);
  expect(logs).toContainEqual(
    expect.objectContaining({
      event: 'turn-enqueued-by-sweep',
      conversationKey: logIdOf(conversationKeyFor(customer), config.logIdSecret),
      messageId: messageSid,
    }),
  );
  await transcriptsWritten(services);
  expect(await services.transcripts.messages.findById(inboundMessageId('whatsapp', messageSid)).lean()).toMatchObject({ text: 'are you open on Sunday?' });
  // Once: the note is crossed off (no later sweep adds another job), and the inbox is empty.
  const notes = await createIntakeLedger(redis, QUEUE_PREFIX).stale(Date.now() + 1);
  expect(notes.filter((note) => note.conversationKey === conversationKeyFor(customer))).toEqual([]);
  await eventually(async () => ((await services?.inbox.size(conversationKeyFor(customer))) === 0 ? true : undefined), 10_000);
  expect(received()).toEqual(['Answer to: are you open on Sunday?']);
}, 90_000);
