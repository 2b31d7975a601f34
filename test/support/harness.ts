/**
 * One running service for a test file: real Redis and MongoDB-wire storage (started once by
 * global-setup), the fake Twilio API, and the deterministic model unless the test passes its
 * own provider. Logs are captured, not printed; tests assert on them.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { Worker } from 'bullmq';
import { Redis } from 'ioredis';
import request from 'supertest';
import { loadConfig, type Config } from '../../src/config.js';
import { createServices, type ServiceOverrides, type Services } from '../../src/composition-root.js';
import { logIdOf } from '../../src/logger-privacy.js';
import { createLogger } from '../../src/logger.js';
import type { ModelProvider } from '../../src/model/provider.js';
import type { TurnJob } from '../../src/queue/turn-queue.js';
import { createDeterministicModels, type DeterministicModels, type Script } from './deterministic-model.js';
import { startFakeTwilio } from './fake-twilio.js';
import { TEST_REDIS_DATABASES } from './services.js';
import { inboundWhatsappParams, signTwilioRequest, statusCallbackParams, type OutboundMessageStatus } from './twilio-signature.js';
import { RUN_TS } from './run-ts.js';

export const TEST_ACCOUNT_SID = `AC${'a1'.repeat(16)}`;
export const TEST_AUTH_TOKEN = '0123456789abcdef0123456789abcdef';
export const TEST_SENDER = 'whatsapp:+14155238886';
export const PUBLIC_BASE_URL = 'https://assistant.example.test';

export type FakeTwilio = Awaited<ReturnType<typeof startFakeTwilio>>;

export interface LogLine {
  level: string;
  event: string;
  [field: string]: unknown;
}

export interface HarnessOptions {
  script?: Script;
  models?: ModelProvider;
  env?: Record<string, string>;
  overrides?: Omit<ServiceOverrides, 'models' | 'logger' | 'queuePrefix'>;
  /** Start a worker in this process (default true). */
  worker?: boolean;
  twilio?: FakeTwilio;
  /** Use the OpenAI provider built from configuration (point OPENAI_BASE_URL at a stub). */
  useConfiguredModel?: boolean;
}

export interface Harness {
  services: Services;
  config: Config;
  twilio: FakeTwilio;
  models: DeterministicModels;
  logs: LogLine[];
  worker: Worker<TurnJob> | undefined;
  http: ReturnType<typeof request>;
  env: Record<string, string>;
  queuePrefix: string;
  /** The opaque id a conversation key, number or e-mail has in the service's logs (`npm run log-id`). */
  logId(value: string): string;
  /** Posts a correctly signed inbound WhatsApp message; returns the supertest response. */
  sendWhatsapp(input: {
    from: string;
    body: string;
    messageSid?: string;
    profileName?: string;
    /** `MediaUrl{i}` / `MediaContentType{i}` (see `twilio.addMedia`). */
    media?: { url: string; contentType: string }[];
    repliedTo?: string;
    /** A tapped quick-reply button (`ButtonText`/`ButtonPayload`; `body` should be its text). */
    button?: { text: string; payload: string };
    /** A chosen list row (`ListId`/`ListTitle`; `body` should be its title). */
    listRow?: { id: string; title: string };
  }): Promise<request.Response>;
  /**
   * Posts Twilio's status callback for a message, as Twilio does: to the `StatusCallback` URL it
   * was sent with (query and all, signed over the whole URL), else (`url`, or a message the fake
   * never saw) to `url` or the plain status route.
   */
  sendStatus(input: { messageSid: string; status: string; errorCode?: string; url?: string }): Promise<request.Response>;
  close(): Promise<void>;
}

export function newMessageSid(): string {
  return `SM${randomUUID().replace(/-/g, '')}`;
}

/**
 * REDIS_URL for a suite that runs the service as `src/main.ts` processes: a Redis database of its
 * own (`db`, 1–15, one per such suite). Those processes use production's queue prefix, so on a
 * shared database one suite's worker could take another's turn jobs (and answer through the wrong
 * fake Twilio). A cluster has one database: there the suite keeps the shared one.
 */
export function ownRedisDatabase(db: number): Record<string, string> {
  const redisUrl = process.env.TEST_REDIS_URL;
  if (!redisUrl || process.env.TEST_REDIS_CLUSTER_NODES) return {};
  const url = new URL(redisUrl);
  url.pathname = `/${db}`;
  return { REDIS_URL: url.toString() };
}

/** Databases 1–15 are `ownRedisDatabase`'s; the rest of global-setup's are handed out here. */
const FIRST_HARNESS_DATABASE = 16;

/**
 * REDIS_URL for one harness: a Redis database no other harness of this run uses. The service's
 * keys are per conversation, not per test, so two suites that happen to write as the same
 * customer (at the same time, or one after the other) would otherwise share a conversation's
 * lock, history and pending state. Allocated by INCR on database 0, unique across test workers;
 * a cluster has one database, so there every harness keeps the shared one.
 */
async function harnessDatabase(): Promise<Record<string, string>> {
  const redisUrl = process.env.TEST_REDIS_URL;
  if (!redisUrl || process.env.TEST_REDIS_CLUSTER_NODES) return {};
  const allocator = new Redis(redisUrl, { maxRetriesPerRequest: 2 });
  try {
    const count = await allocator.incr('test:harness-databases');
    const url = new URL(redisUrl);
    url.pathname = `/${FIRST_HARNESS_DATABASE + ((count - 1) % (TEST_REDIS_DATABASES - FIRST_HARNESS_DATABASE))}`;
    return { REDIS_URL: url.toString() };
  } finally {
    allocator.disconnect();
  }
}

export function testEnv(twilioBaseUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  const redisUrl = process.env.TEST_REDIS_URL;
  const mongoUri = process.env.TEST_MONGODB_URI;
  if (!redisUrl || !mongoUri) throw new Error('global-setup did not publish TEST_REDIS_URL / TEST_MONGODB_URI');
  const database = `t_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const mongo = new URL(mongoUri);
  mongo.pathname = `/${database}`;
  return {
    NODE_ENV: 'test',
    PORT: '0',
    PUBLIC_BASE_URL,
    REDIS_URL: redisUrl,
    MONGODB_URI: mongo.toString(),
    TWILIO_ACCOUNT_SID: TEST_ACCOUNT_SID,
    TWILIO_AUTH_TOKEN: TEST_AUTH_TOKEN,
    TWILIO_WHATSAPP_FROM: TEST_SENDER,
    TWILIO_API_BASE_URL: twilioBaseUrl,
    OPENAI_API_KEY: 'test-key-not-used',
    TURN_LOCK_TTL_MS: '3000',
    // Suites expect one reply per message; the coalescing suite sets its own quiet period.
    COALESCE_MS: '0',
    WORKER_CONCURRENCY: '8',
    // `npm run test:cluster`: the service on the Redis Cluster global-setup started (REDIS_URL gives only its password).
    ...(process.env.TEST_REDIS_CLUSTER_NODES
      ? { REDIS_CLUSTER_NODES: process.env.TEST_REDIS_CLUSTER_NODES, REDIS_URL: `redis://:${process.env.TEST_REDIS_CLUSTER_PASSWORD ?? ''}@127.0.0.1:1` }
      : {}),
    ...extra,
  };
}

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const twilio = options.twilio ?? (await startFakeTwilio({ accountSid: TEST_ACCOUNT_SID, authToken: TEST_AUTH_TOKEN }));
  const env = testEnv(twilio.baseUrl, { ...(options.env?.REDIS_URL === undefined ? await harnessDatabase() : {}), ...options.env });
  const config = loadConfig(env);
  const logs: LogLine[] = [];
  const logger = createLogger({ level: 'debug', sink: (line) => logs.push(JSON.parse(line) as LogLine) });
  const models = createDeterministicModels(options.script);
  // A hash tag like production's QUEUE_PREFIX, so the same harness runs on a Redis Cluster.
  const queuePrefix = `{bull-${randomUUID().slice(0, 8)}}`;
  const services = await createServices(config, {
    ...options.overrides,
    ...(options.useConfiguredModel ? {} : { models: options.models ?? models }),
    logger,
    queuePrefix,
    modelBreakerScope: queuePrefix,
  });
  const worker = options.worker === false ? undefined : services.startWorker();
  if (worker) await worker.waitUntilReady();
  const http = request(services.app);

  /** A public URL's path and query, as the service sees a request to it. */
  const pathOf = (url: string) => {
    const parsed = new URL(url);
    return `${parsed.pathname}${parsed.search}`;
  };
  const signedPost = (path: string, params: Record<string, string>) =>
    http
      .post(path)
      .type('form')
      .set('X-Twilio-Signature', signTwilioRequest(TEST_AUTH_TOKEN, `${PUBLIC_BASE_URL}${path}`, params))
      .send(params);

  return {
    services,
    config,
    twilio,
    models,
    logs,
    worker,
    http,
    env,
    queuePrefix,
    logId: (value) => logIdOf(value, config.logIdSecret),
    sendWhatsapp: ({ from, body, messageSid, profileName, media, repliedTo, button, listRow }) =>
      signedPost('/webhooks/whatsapp', {
        ...inboundWhatsappParams({
          accountSid: TEST_ACCOUNT_SID,
          from,
          to: TEST_SENDER,
          body,
          messageSid: messageSid ?? newMessageSid(),
          ...(profileName ? { profileName } : {}),
          ...(media ? { media } : {}),
          ...(repliedTo ? { repliedTo: { messageSid: repliedTo, sender: TEST_SENDER } } : {}),
          ...(button ? { button } : {}),
        }),
        ...(listRow ? { ListId: listRow.id, ListTitle: listRow.title, MessageType: 'interactive' } : {}),
      }),
    sendStatus: ({ messageSid, status, errorCode, url }) =>
      signedPost(
        pathOf(url ?? twilio.messages.find((sent) => sent.sid === messageSid)?.statusCallback ?? `${PUBLIC_BASE_URL}/webhooks/whatsapp/status`),
        statusCallbackParams({
          accountSid: TEST_ACCOUNT_SID,
          messageSid,
          status: status as OutboundMessageStatus,
          ...(errorCode ? { errorCode: Number(errorCode) } : {}),
        }),
      ),
    async close() {
      await services.mongo.dropDatabase().catch(() => undefined);
      await services.close();
      if (!options.twilio) await twilio.close();
    },
  };
}

/**
 * Polls until `check` returns a value, or fails. `explain` (e.g. `logsAbout`) is added to the
 * failure: what the service did meanwhile, so a run that failed on another machine says why.
 */
export async function eventually<T>(check: () => T | undefined | Promise<T | undefined>, timeoutMs = 10_000, explain?: () => string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms${explain ? `\n${explain()}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The last `count` log lines that mention `needle`, or are warnings or errors: one compact line each, with how long ago it was logged. */
export function logsAbout(logs: readonly LogLine[], needle: string, count = 60): string {
  const now = Date.now();
  return logs
    .filter((line) => line.level === 'warn' || line.level === 'error' || JSON.stringify(line).includes(needle))
    .slice(-count)
    .map(({ level, event, time, ...rest }) => `-${now - Date.parse(String(time))} ms ${level} ${event} ${JSON.stringify(rest).slice(0, 300)}`)
    .join('\n');
}

export interface ServiceProcess {
  /** The OS process id (to read its memory from /proc). */
  pid: number;
  /** What the process printed so far (its JSON log lines, stdout and stderr). */
  output(): string;
  /** Kills it without warning (SIGKILL), as a crash or an OOM kill would, and waits for the exit. */
  kill(): Promise<void>;
}

/**
 * Runs the service as its own process (`src/main.ts web|worker|all`) with `env` (see testEnv),
 * resolving once it listens and/or runs its worker. For tests that kill the service mid-turn
 * and start it again on the same port.
 */
export async function startServiceProcess(env: Record<string, string>, role: 'web' | 'worker' | 'all' = 'all'): Promise<ServiceProcess> {
  const child = spawn(process.execPath, [...RUN_TS, 'src/main.ts', role], {
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const killOnExit = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  const kill = async (): Promise<void> => {
    process.removeListener('exit', killOnExit);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  try {
    await eventually(() => {
      if (child.exitCode !== null) throw new Error(`the service exited during start-up (code ${child.exitCode}):\n${output.slice(-2000)}`);
      return (role === 'worker' || output.includes('"event":"server-listening"')) && (role === 'web' || output.includes('"event":"worker-started"'));
    }, 30_000);
  } catch (error) {
    await kill();
    throw error;
  }
  return { pid: child.pid ?? 0, output: () => output, kill };
}
