/**
 * The service on a real three-primary Redis Cluster (`REDIS_CLUSTER_NODES`, password-protected,
 * AOF on): every Lua script, MULTI and pipeline the service sends keeps its keys on one slot (a
 * cluster refuses anything else with CROSSSLOT), and WhatsApp turns, a duplicate webhook, a
 * widget conversation and a hand-off notice go end to end with the web side in this process
 * and the worker in its own. `REDIS_URL` points at a closed port: only the cluster is reachable.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Queue } from 'bullmq';
import { Cluster } from 'ioredis';
import { createEventLog } from '../../channels/web/event-log.js';
import { checkRate } from '../../channels/web/rate-limit.js';
import { createStreamSlots } from '../../channels/web/stream-slots.js';
import { loadConfig } from '../../src/config.js';
import { createContactIndex } from '../../src/contacts/contact-index.js';
import { createContactStore } from '../../src/contacts/contact-store.js';
import type { InboundMessage } from '../../src/contracts/index.js';
import { createConversationState } from '../../src/orchestrator/state/conversation-state.js';
import { createDecisionStore } from '../../src/orchestrator/state/decision-store.js';
import { createFactStore } from '../../src/orchestrator/state/fact-store.js';
import { createTakeoverStateStore } from '../../src/takeover/takeover-state.js';
import { createConversationInbox } from '../../src/queue/conversation-inbox.js';
import { acquireConversationLock, lockRequest } from '../../src/queue/conversation-lock.js';
import { redisKeys } from '../../src/queue/keys.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { createRedis, QUEUE_PREFIX, type RedisClient } from '../../src/redis.js';
import { connectMongo } from '../../src/store/transcript-store.js';
import { eventually, newMessageSid, startHarness, testEnv, type Harness, type LogLine } from '../support/harness.js';
import { startRedisCluster, type RedisClusterHandle } from '../support/services.js';
import { handoffsSettled, turnsSettled } from '../support/settled.js';
import { openSse } from '../support/sse.js';
import { RUN_TS } from '../support/run-ts.js';

const SALES_PHONE = 'whatsapp:+34600000911';
const SHOP = 'https://shop.example.test';
const ADMIN_TOKEN = 'admin-token-for-cluster-tests-0123456789';
const SITES = JSON.stringify([{ key: 'cluster-site', name: 'Harbour Lane', origins: [SHOP] }]);

let cluster: RedisClusterHandle;
let clusterEnv: Record<string, string>;
beforeAll(async () => {
  cluster = await startRedisCluster();
  // The host of REDIS_URL is never dialled on a cluster: only its credentials are used.
  clusterEnv = { REDIS_CLUSTER_NODES: cluster.nodes, REDIS_URL: `redis://:${cluster.password}@127.0.0.1:1` };
}, 60_000);
afterAll(async () => {
  await cluster?.stop();
});

/** A command client on the cluster, as the service builds it from its configuration. */
function clusterClient(): RedisClient {
  const config = loadConfig(testEnv('http://127.0.0.1:1', clusterEnv));
  const client = createRedis(config);
  expect(client).toBeInstanceOf(Cluster);
  return client;
}

function inbound(conversationKey: string, text: string): InboundMessage {
  return { channel: 'whatsapp', conversationKey, messageId: randomUUID(), from: { address: conversationKey }, text, receivedAt: Date.now(), metadata: {} };
}

test('REDIS_CLUSTER_NODES takes host:port seed nodes; anything else stops start-up naming it', () => {
  expect(loadConfig(testEnv('http://127.0.0.1:1', { REDIS_CLUSTER_NODES: ' 10.0.0.1:6379, redis-2.internal:7000' })).redisClusterNodes).toEqual([
    { host: '10.0.0.1', port: 6379 },
    { host: 'redis-2.internal', port: 7000 },
  ]);
  expect(loadConfig(testEnv('http://127.0.0.1:1')).redisClusterNodes).toBeUndefined();
  expect(() => loadConfig(testEnv('http://127.0.0.1:1', { REDIS_CLUSTER_NODES: 'redis://10.0.0.1:6379' }))).toThrow(
    'invalid configuration: REDIS_CLUSTER_NODES: expected comma-separated host:port seed nodes, e.g. 10.0.0.1:6379,10.0.0.2:6379',
  );
});

describe('every Lua script, transaction and pipeline keeps to one cluster slot', () => {
  let redis: RedisClient;
  beforeAll(() => {
    redis = clusterClient();
  });
  afterAll(async () => {
    await redis.quit();
  });

  // Many conversations, so their keys spread over every primary.
  const conversations = Array.from({ length: 12 }, (_, index) => `whatsapp:+4477009${String(index).padStart(5, '0')}`);

  test('the inbox: dedupe and append, batch with retry state, freeze, failures, acknowledge, discard', async () => {
    const inbox = createConversationInbox(redis);
    for (const conversationKey of conversations) {
      const first = inbound(conversationKey, 'hello');
      expect(await inbox.accept(first)).toBe('appended');
      expect(await inbox.accept(first)).toBe('duplicate');
      // The first one's job has not tried the lock yet: it answers this one too.
      expect(await inbox.accept(inbound(conversationKey, 'second'))).toBe('queued');
      await inbox.unmarkQueued(conversationKey);
      const request = lockRequest(conversationKey, 5000);
      const locked = await inbox.lockAndBatch(conversationKey, 5, request);
      expect(locked.acquired).toBe(true);
      expect(locked.batch()?.entries.map((entry) => entry.message.text)).toEqual(['hello', 'second']);
      expect(await inbox.accept(inbound(conversationKey, 'third'))).toBe('held');
      const failed = await inbox.recordFailure(conversationKey, first.messageId, { now: 1_000, firstDelayMs: 10, maxDelayMs: 100, suspect: false });
      expect(failed.attempts).toBe(1);
      const batch = await inbox.batch(conversationKey, 1);
      expect(batch?.entries[0].message.text).toBe('hello');
      expect(batch?.retry?.attempts).toBe(1);
      if (!batch) throw new Error('no batch');
      await inbox.acknowledge(conversationKey, await inbox.freeze(conversationKey, batch));
      const rest = await inbox.batch(conversationKey, 5);
      expect(rest?.entries.map((entry) => entry.message.text)).toEqual(['second', 'third']);
      await inbox.discardHead(conversationKey);
      // The acknowledgement that empties the inbox frees the lock in the same script.
      if (!rest) throw new Error('no batch');
      expect(await inbox.acknowledge(conversationKey, { ...rest, entries: [rest.entries[1]!] }, request.token)).toBe(true);
      const next = await acquireConversationLock(redis, conversationKey, 300, () => undefined);
      expect(next).toBeDefined();
      await next?.release();
      expect(await inbox.size(conversationKey)).toBe(0);
    }
  });

  test("a takeover's end: placed in the inbox ahead of waiting customer messages, its mirror marked ended then cleared", async () => {
    const inbox = createConversationInbox(redis);
    const takeover = createTakeoverStateStore(redis);
    for (const conversationKey of conversations) {
      const holder = { id: 'whatsapp:+34600915001', name: 'Ana', via: 'whatsapp' as const };
      await takeover.set({
        handoffId: 'h1',
        conversationId: conversationKey,
        channel: 'whatsapp',
        team: 'sales',
        holderId: holder.id,
        holderName: 'Ana',
        holderVia: 'whatsapp',
        takenAt: 1,
        lastTeammateAt: 1,
      });
      // The teammate's holdings (a set: several conversations at once) are in their own slot.
      expect(await takeover.holding(holder.id)).toEqual(['h1']);
      await inbox.accept(inbound(conversationKey, 'waiting'));
      await takeover.end(conversationKey, 'h1', holder.id, 2);
      expect(await takeover.holding(holder.id)).toEqual([]);
      const end = { ...inbound(conversationKey, ''), teammate: { action: 'handed_back' as const, handoffId: 'h1', actor: holder, teamLabel: 'Sales team' } };
      expect(await inbox.accept(end)).toBe('queued');
      expect((await inbox.batch(conversationKey, 5))?.entries.map((entry) => entry.message.messageId)).toEqual([end.messageId]);
      expect(await takeover.get(conversationKey)).toBeUndefined();
      expect((await takeover.onCustomerMessages(conversationKey, [{}]))?.endedAt).toBe(2);
      await takeover.clear(conversationKey, 'h1');
      expect(await takeover.onCustomerMessages(conversationKey, [{}])).toBeUndefined();
      await redis.del(redisKeys.inbox(conversationKey), redisKeys.queued(conversationKey));
    }
  });

  test("the conversation lock: acquire, renew, release by its holder's token", async () => {
    const holdAndRelease = async (conversationKey: string) => {
      // A TTL long enough that a loaded CI machine's stalled timers never lose it (renewed every
      // second, given up 2.4 s after the last renewal sent); 300 ms, then 1.5 s, were lost there.
      const lock = await acquireConversationLock(redis, conversationKey, 3000, () => undefined);
      expect(lock).toBeDefined();
      expect(await acquireConversationLock(redis, conversationKey, 3000, () => undefined)).toBeUndefined();
      // Still held, in Redis too, after more than twice its TTL.
      await new Promise((resolve) => setTimeout(resolve, 6500));
      expect(await redis.pttl(redisKeys.lock(conversationKey))).toBeGreaterThan(0);
      expect(lock?.held).toBe(true);
      await lock?.release();
      const again = await acquireConversationLock(redis, conversationKey, 300, () => undefined);
      expect(again).toBeDefined();
      await again?.release();
    };
    await Promise.all(conversations.map(holdAndRelease));
  });

  test('orchestrator state: compare-and-set facts, the turn-start read, decisions, the one-command reset', async () => {
    const facts = createFactStore(redis);
    const state = createConversationState(redis);
    const decisions = createDecisionStore(redis);
    for (const conversationKey of conversations) {
      const stored = await facts.remember(conversationKey, 'sales', { teamSize: 12 });
      expect(stored.facts).toEqual({ teamSize: 12 });
      await facts.writeActiveRole(conversationKey, 'sales');
      await state.writeSession(conversationKey, { entity: 'acme' });
      await state.setPending(conversationKey, { runId: 'run-1', toolName: 'ask', question: 'Which?', data: null, attempts: 0 });
      await decisions.put(conversationKey, {
        runId: 'run-1',
        roleId: 'sales',
        tier: 'fast',
        inScope: true,
        degraded: false,
        facts: {},
        factsVersion: 1,
        offeredTools: [],
      });
      const start = await state.readTurnStart(conversationKey, ['sales', 'support']);
      expect(start).toMatchObject({ activeRoleId: 'sales', session: { entity: 'acme' }, pending: { runId: 'run-1' } });
      expect(Object.fromEntries(start.facts)).toEqual({ sales: { version: 1, facts: { teamSize: 12 } }, support: { version: 0, facts: {} } });
      await state.reset(conversationKey, ['sales', 'support', 'bookkeeper']);
      expect(await state.readTurnStart(conversationKey)).toEqual({ activeRoleId: undefined, pending: undefined, session: {}, facts: new Map() });
      expect((await facts.read(conversationKey, 'sales')).facts).toEqual({});
    }
  });

  test('widget keys: the event log (stream, TTL, notify), stream slots and rate limits', async () => {
    const events = createEventLog(redis);
    const slots = createStreamSlots(redis, { perVisitor: 1, heartbeatMs: 1_000 });
    try {
      for (const [index, conversationKey] of conversations.map((key) => key.replace('whatsapp', 'web:site')).entries()) {
        let woken = 0;
        const stop = events.listen(conversationKey, () => (woken += 1));
        // The subscriber connects on first listen: keep appending until a notification arrives.
        const first = await events.append(conversationKey, 'message', { id: `m-${index}`, role: 'assistant', text: 'hi' });
        await eventually(async () => {
          if (woken > 0) return true;
          await events.append(conversationKey, 'typing', {});
          return undefined;
        });
        stop();
        expect((await events.after(conversationKey, '0-0'))[0]).toEqual({
          id: first,
          type: 'message',
          data: { id: `m-${index}`, role: 'assistant', text: 'hi' },
        });
        expect(await events.tail(conversationKey)).not.toBe('0-0');

        const slot = await slots.take(`visitor-${index}`);
        expect(slot).toBeDefined();
        expect(await slots.take(`visitor-${index}`)).toBeUndefined();
        await slot?.refresh();
        await slot?.release();
        expect(await checkRate(redis, 'messages', `visitor-${index}`, 1)).toEqual({ allowed: true });
        expect((await checkRate(redis, 'messages', `visitor-${index}`, 1)).allowed).toBe(false);
      }
    } finally {
      await events.close();
    }
  });

  test('the caller index: the load and its marker, write-through of contacts and their aliases, lookups', async () => {
    const mongo = await connectMongo(testEnv('http://127.0.0.1:1').MONGODB_URI ?? '');
    const logs: LogLine[] = [];
    const contacts = createContactIndex(createContactStore(mongo), {
      redis,
      logger: createLogger({ level: 'debug', sink: (line) => logs.push(JSON.parse(line) as LogLine) }),
      metrics: createMetrics(),
      secret: 'test-people-secret',
    });
    try {
      await contacts.start();
      await eventually(() => logs.some((line) => line.event === 'contact-index-complete'), 20_000);
      for (const [index, address] of conversations.entries()) {
        await contacts.upsert({ address, name: `Cluster ${index}`, externalId: `cluster-${index}`, email: `c${index}@cluster.example`, entities: [] });
      }
      for (const [index, address] of conversations.entries()) {
        expect(await contacts.get(address)).toMatchObject({ name: `Cluster ${index}` });
        expect(await contacts.findVerifiedUser({ externalId: 'nobody', email: `C${index}@cluster.example` })).toMatchObject({ address });
        await contacts.upsert({ address, name: `Cluster ${index}`, externalId: `cluster-moved-${index}`, entities: [] });
        expect(await contacts.findVerifiedUser({ externalId: `cluster-${index}` })).toBeUndefined();
        expect(await contacts.findVerifiedUser({ externalId: `cluster-moved-${index}` })).toMatchObject({ address });
        expect(await contacts.remove(address)).toBe(true);
        expect(await contacts.get(address)).toBeUndefined();
      }
    } finally {
      contacts.close();
      await mongo.dropDatabase();
      await mongo.close();
    }
  });

  test("BullMQ's queues live on one slot under the hash-tagged prefix", async () => {
    const queue = new Queue('turns', { connection: redis, prefix: QUEUE_PREFIX });
    try {
      await queue.add('turn', { conversationKey: 'whatsapp:+447700900001', messageId: 'm1' }, { jobId: 'slot-check' });
      expect(await queue.getJobCounts('wait')).toEqual({ wait: 1 });
      await queue.obliterate({ force: true });
    } finally {
      await queue.close();
    }
  });
});

describe('the pipeline on the cluster: web here, the worker in its own process', () => {
  let harness: Harness;
  let worker: ChildProcess;
  let workerOutput = '';
  let server: Server;
  let base: string;
  beforeAll(async () => {
    harness = await startHarness({
      worker: false,
      env: {
        ...clusterEnv,
        WEB_SITES: SITES,
        ADMIN_TOKEN,
        HANDOFF_TEAMS: JSON.stringify({ sales: { label: 'Sales team', whatsapp: [SALES_PHONE] }, support: { label: 'Support team' } }),
      },
    });
    expect(harness.services.redis).toBeInstanceOf(Cluster);
    worker = spawn(process.execPath, [...RUN_TS, 'test/support/worker-process.ts'], {
      env: { ...process.env, ...harness.env, TEST_QUEUE_PREFIX: harness.queuePrefix, TEST_MODEL_DELAY_MS: '0', TEST_SCRIPT: 'handoff' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    worker.stdout?.on('data', (chunk: Buffer) => (workerOutput += chunk.toString()));
    worker.stderr?.on('data', (chunk: Buffer) => (workerOutput += chunk.toString()));
    await eventually(() => workerOutput.includes('worker-ready'), 30_000);
    server = harness.services.app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 60_000);
  afterAll(async () => {
    const exited = new Promise((resolve) => worker?.once('exit', resolve));
    worker?.kill('SIGTERM');
    await exited;
    server?.close();
    await harness?.close();
    // Nothing either process logged was a cluster refusal (keys of two slots, a redirection it could not follow, a cluster down).
    const refusal = /CROSSSLOT|same slots allocation group|MOVED|ASK |CLUSTERDOWN|TRYAGAIN|ClusterAllFailed/;
    expect(workerOutput).not.toMatch(refusal);
    expect(harness.logs.filter((line) => refusal.test(JSON.stringify(line)))).toEqual([]);
  });

  test('WhatsApp: each customer gets their reply, in order, once — a retried webhook adds nothing', async () => {
    const customers = Array.from({ length: 6 }, (_, index) => `whatsapp:+4477009100${index}`);
    const retried = newMessageSid();
    for (const customer of customers) {
      expect((await harness.sendWhatsapp({ from: customer, body: `How do I log in, ${customer}?` })).status).toBe(200);
      expect((await harness.sendWhatsapp({ from: customer, body: `Help with my password, ${customer}` })).status).toBe(200);
    }
    expect((await harness.sendWhatsapp({ from: customers[0]!, body: 'Help, retried by Twilio', messageSid: retried })).status).toBe(200);
    expect((await harness.sendWhatsapp({ from: customers[0]!, body: 'Help, retried by Twilio', messageSid: retried })).status).toBe(200);
    await eventually(() => harness.twilio.messages.filter((message) => customers.includes(message.to)).length >= 13 || undefined, 30_000);
    await turnsSettled(harness.services);
    for (const customer of customers) {
      const expected = [`Slow answer to: How do I log in, ${customer}?`, `Slow answer to: Help with my password, ${customer}`];
      if (customer === customers[0]) expected.push('Slow answer to: Help, retried by Twilio');
      expect(harness.twilio.messages.filter((message) => message.to === customer).map((message) => message.body)).toEqual(expected);
    }
  }, 60_000);

  test('a hand-off: the sales team gets its notice once', async () => {
    await harness.sendWhatsapp({ from: 'whatsapp:+447700910099', body: 'A demo for our team of 12, please' });
    const handoff = await eventually(async () => {
      const [latest] = await harness.services.handoffs.list({ limit: 1 });
      return latest?.notices.every((notice) => notice.status === 'sent') ? latest : undefined;
    }, 30_000);
    await handoffsSettled(harness.services);
    expect(handoff.customer.address).toBe('whatsapp:+447700910099');
    expect(await harness.services.handoffs.list({ limit: 10 })).toHaveLength(1);
    const notices = harness.twilio.messages.filter((message) => message.to === SALES_PHONE);
    expect(notices).toHaveLength(1);
    expect(notices[0]?.body).toContain('Wants: Demo for a team of 12');
    expect(notices[0]?.body).toContain('https://wa.me/447700910099');
  }, 60_000);

  test('readiness pings the cluster', async () => {
    expect((await harness.http.get('/readyz')).status).toBe(200);
  });

  test('the queue dashboard reads the queues on the cluster', async () => {
    const api = await harness.http.get('/admin/queues/api/queues').set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    expect(api.status).toBe(200);
    const queues = (api.body as { queues: { name: string; counts: Record<string, number> }[] }).queues;
    expect(queues.map((queue) => queue.name).sort()).toEqual(['handoff-notices', 'turns']);
    expect(queues.find((queue) => queue.name === 'turns')?.counts.completed).toBeGreaterThan(0);
    expect((await harness.http.get('/admin/queues/api/redis/stats').set('Authorization', `Bearer ${ADMIN_TOKEN}`)).status).toBe(200);
  });

  test("the widget: the reply streams to the visitor's event stream, a double-click adds nothing", async () => {
    const session = await harness.http.post('/api/widget/session').set('Origin', SHOP).send({ siteKey: 'cluster-site' });
    expect(session.status).toBe(200);
    const token = session.body.token as string;
    const { events: streaming } = await openSse(`${base}/api/widget/events?token=${encodeURIComponent(token)}`, {
      headers: { origin: SHOP },
      until: (events) => events.some((event) => event.event === 'message'),
      timeoutMs: 30_000,
    });
    const post = () =>
      harness.http
        .post('/api/widget/messages')
        .set('Origin', SHOP)
        .set('Authorization', `Bearer ${token}`)
        .send({ clientMessageId: 'cluster-click-1', text: 'How do I log in?' });
    const [first, second] = await Promise.all([post(), post()]);
    expect([first.body.duplicate, second.body.duplicate].sort()).toEqual([false, true]);
    const events = await streaming;
    expect(events.find((event) => event.event === 'message')?.data).toMatchObject({ text: 'Slow answer to: How do I log in?' });
    await turnsSettled(harness.services);
    const history = await harness.http.get('/api/widget/history').set('Authorization', `Bearer ${token}`);
    expect(history.body.messages.map((message: { role: string; text: string }) => [message.role, message.text])).toEqual([
      ['visitor', 'How do I log in?'],
      ['assistant', 'Slow answer to: How do I log in?'],
    ]);
  }, 60_000);
});

test('no node refused a command for keys in two slots, whoever sent it and whether or not it was logged', async () => {
  const redis = clusterClient();
  try {
    await redis.ping(); // connected: the slot map and its nodes are known
    const primaries = (redis as Cluster).nodes('master');
    expect(primaries).toHaveLength(3);
    for (const node of primaries) {
      const errors = await node.info('errorstats');
      expect(errors).not.toMatch(/errorstat_CROSSSLOT/);
      // The suite reached every primary (each holds some conversations' keys).
      expect(await node.dbsize()).toBeGreaterThan(0);
    }
  } finally {
    await redis.quit();
  }
});
