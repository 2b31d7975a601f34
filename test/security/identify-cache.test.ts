/**
 * Who is talking, answered by the Redis caller index alone (`contact-index.ts`), and still never
 * a wrong caller. On a Redis and a FerretDB of its own (the test flushes the one and pauses the
 * other — SIGSTOP: every request hangs): no turn reads a contact from MongoDB, known or never
 * seen; with MongoDB paused a linked number and a website user are named and a never-seen number
 * is anonymous without waiting on MongoDB; an admin write applies to the next turn; racing writes
 * of one contact leave Redis with MongoDB's final value; a Redis that lost its data is loaded
 * again from MongoDB.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Cluster, Redis } from 'ioredis';
import type { mongo } from 'mongoose';
import { createContactIndex } from '../../src/contacts/contact-index.js';
import { createContactStore, type Contact, type ContactStore } from '../../src/contacts/contact-store.js';
import type { InboundMessage } from '../../src/contracts/index.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { BUSINESS_CATEGORY_PREFIXES } from '../support/business-mcp.js';
import type { Script } from '../support/deterministic-model.js';
import { eventually, newMessageSid, startHarness, type Harness, type LogLine } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';
import { startRedis, startRestartableFerretDb, type RedisHandle, type RestartableMongoHandle } from '../support/services.js';

const ACME = 'whatsapp:+447700906001';
const UNLINKED_LATER = 'whatsapp:+447700906002';
const NEVER_SEEN = 'whatsapp:+447700906999';
const CREATED_LATER = 'whatsapp:+447700906004';
const ADMIN_TOKEN = 'identify-cache-admin-token-0123456789';
const ACME_INVOICE = 'Invoice 1042: 1250.00 EUR, overdue, due 2026-11-15';

/** Lists the caller's invoices, then repeats what the tool said. */
const listInvoices: Script = ({ toolResults }) => {
  if (toolResults.length === 0) return { toolCalls: [{ name: 'invoice_list', input: {} }] };
  const said = toolResults.map(({ output }) => JSON.stringify(output));
  return { text: `What the tools said: ${said.join(' | ')}` };
};

const acme = (address: string) => ({ address, name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] });

let redis: RedisHandle;
let database: RestartableMongoHandle;
let mcp: McpTestServer;
let harness: Harness;
/** The contact store without the index: what MongoDB holds. */
let stored: ContactStore;
/** Every MongoDB command the service's driver started. */
const commands: mongo.CommandStartedEvent[] = [];

const events = (name: string) => harness.logs.filter((line) => line.event === name).length;

beforeAll(async () => {
  redis = await startRedis();
  database = await startRestartableFerretDb();
  mcp = await startMcpServer();
  harness = await startHarness({
    script: listInvoices,
    env: {
      // `npm run test:cluster` (run this file alone then): the cluster, whose password REDIS_URL carries.
      ...(process.env.TEST_REDIS_CLUSTER_NODES ? {} : { REDIS_URL: redis.url }),
      MONGODB_URI: `${database.uri}identify?monitorCommands=true`,
      MCP_SERVER_URL: mcp.url,
      MCP_CATEGORY_PREFIXES: BUSINESS_CATEGORY_PREFIXES,
      ADMIN_TOKEN,
    },
  });
  stored = createContactStore(harness.services.mongo);
  harness.services.mongo.getClient().on('commandStarted', (event) => commands.push(event));
  // A new Redis: the service loads the (empty) index from MongoDB at start-up.
  await eventually(() => events('contact-index-complete') > 0, 20_000);
  await harness.services.contacts.upsert(acme(ACME));
  await harness.services.contacts.upsert(acme(UNLINKED_LATER));
  await harness.services.contacts.upsert({ address: 'user:u-ana', name: 'Ana Pérez', customerId: 'CUST-ACME', email: 'ana@acme.example', entities: [] });
}, 60_000);
afterAll(async () => {
  database.resume();
  await harness.close();
  await mcp.close();
  await database.stop();
  await redis.stop();
});

async function ask(from: string, body: string): Promise<string> {
  const before = harness.twilio.messages.length;
  await harness.sendWhatsapp({ from, body });
  const messages = await harness.twilio.waitForMessages(before + 1, 20_000);
  return messages.at(-1)?.body ?? '';
}

const inboundFrom = (address: string): InboundMessage => ({
  channel: 'whatsapp',
  conversationKey: address,
  messageId: newMessageSid(),
  from: { address },
  text: 'hello',
  receivedAt: Date.now(),
  metadata: {},
});

const identify = (address: string) => {
  const channel = harness.services.channels.get('whatsapp');
  if (!channel?.identify) throw new Error('the WhatsApp channel has no identify');
  return channel.identify(inboundFrom(address));
};

const contactReads = () => commands.filter((event) => ['contacts', 'contactaliases'].includes(String(event.command[event.commandName]))).length;
const lookupsFailed = () => harness.services.metrics.value('contact_lookup_failed_total', { answered: 'anonymous' }) ?? 0;

/** Runs `check` with MongoDB paused: whatever it sees came from Redis alone. */
async function withMongoPaused<T>(check: () => Promise<T>): Promise<T> {
  database.pause();
  try {
    return await check();
  } finally {
    database.resume();
  }
}

describe('no MongoDB read in a turn', () => {
  test('a linked customer and a never-seen number both cost no contact read; the linked one reads their own invoices', async () => {
    expect(await ask(ACME, 'my invoices please')).toContain(ACME_INVOICE);
    const before = contactReads();
    expect(await ask(ACME, 'my invoices again please')).toContain(ACME_INVOICE);
    const reply = await ask('whatsapp:+447700906998', 'my invoices please');
    expect(reply).not.toContain(ACME_INVOICE);
    expect(contactReads() - before).toBe(0);
  });
});

describe('MongoDB paused', () => {
  test('a linked number and a website user are named, a never-seen number is anonymous without asking MongoDB — never someone else', async () => {
    const [failedBefore, readsBefore] = [lookupsFailed(), contactReads()];
    await withMongoPaused(async () => {
      expect(await identify(ACME)).toMatchObject({ name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] });
      expect(await harness.services.contacts.findVerifiedUser({ externalId: 'u-ana' })).toMatchObject({ address: 'user:u-ana', customerId: 'CUST-ACME' });
      expect(await harness.services.contacts.findVerifiedUser({ externalId: 'u-someone', email: 'ANA@acme.example' })).toMatchObject({ address: 'user:u-ana' });
      expect(await identify(NEVER_SEEN)).toBeUndefined();
      expect(await harness.services.contacts.findVerifiedUser({ externalId: 'u-never-seen', email: 'nobody@acme.example' })).toBeUndefined();
    });
    // Answered by Redis: no lookup timed out on the paused MongoDB, none was even sent to it.
    expect(lookupsFailed() - failedBefore).toBe(0);
    expect(contactReads() - readsBefore).toBe(0);
  }, 30_000);
});

describe('admin writes', () => {
  const admin = () => ({ Authorization: `Bearer ${ADMIN_TOKEN}` });

  test('a new contact is named on the next turn, an unlink applies to it, and a removal too — with MongoDB paused right after each write', async () => {
    const created = await harness.http.put(`/admin/contacts/${CREATED_LATER}`).set(admin()).send({ name: 'Cy Doe', entities: [] });
    expect(created.status).toBe(201);
    expect(await withMongoPaused(() => identify(CREATED_LATER))).toEqual({ address: CREATED_LATER, name: 'Cy Doe', entities: [] });

    expect(await ask(UNLINKED_LATER, 'my invoices please')).toContain(ACME_INVOICE);
    const unlinked = await harness.http.put(`/admin/contacts/${UNLINKED_LATER}`).set(admin()).send({ name: 'Ana Pérez', entities: [] });
    expect(unlinked.status).toBe(200);
    expect(await withMongoPaused(() => identify(UNLINKED_LATER))).toEqual({ address: UNLINKED_LATER, name: 'Ana Pérez', entities: [] });
    expect(await ask(UNLINKED_LATER, 'my invoices once more')).not.toContain(ACME_INVOICE);

    expect((await harness.http.delete(`/admin/contacts/${UNLINKED_LATER}`).set(admin())).status).toBe(204);
    const failedBefore = lookupsFailed();
    expect(await withMongoPaused(() => identify(UNLINKED_LATER))).toBeUndefined();
    expect(lookupsFailed() - failedBefore).toBe(0);
  }, 30_000);

  test('a website user whose external id or email moves is found by the new ones at once, and no longer by the old', async () => {
    await harness.services.contacts.upsert({ address: 'whatsapp:+447700906003', name: 'Bo Chen', externalId: 'u-bo', email: 'bo@acme.example', entities: [] });
    expect(await harness.services.contacts.findVerifiedUser({ externalId: 'u-bo' })).toMatchObject({ name: 'Bo Chen' });
    const moved = await harness.http
      .put('/admin/contacts/whatsapp:+447700906003')
      .set(admin())
      .send({ name: 'Bo Chen', externalId: 'u-bo-2', email: 'bo.chen@acme.example', entities: [] });
    expect(moved.status).toBe(200);
    await withMongoPaused(async () => {
      expect(await harness.services.contacts.findVerifiedUser({ externalId: 'u-bo' })).toBeUndefined();
      expect(await harness.services.contacts.findVerifiedUser({ externalId: 'u-x', email: 'bo@acme.example' })).toBeUndefined();
      expect(await harness.services.contacts.findVerifiedUser({ externalId: 'u-bo-2' })).toMatchObject({ name: 'Bo Chen' });
      expect(await harness.services.contacts.findVerifiedUser({ externalId: 'u-x', email: 'bo.chen@acme.example' })).toMatchObject({ name: 'Bo Chen' });
    });
  }, 30_000);
});

describe('racing writes of one contact', () => {
  const RACED = 'whatsapp:+447700906010';
  const named = (name: string, email: string): Contact => ({ address: RACED, name, email, entities: [] });

  test('concurrent admin upserts end with Redis holding what MongoDB holds', async () => {
    await harness.services.contacts.upsert(named('Racer', 'racer@acme.example'));
    const responses = await Promise.all(
      Array.from({ length: 8 }, (_, index) =>
        harness.http
          .put(`/admin/contacts/${RACED}`)
          .set({ Authorization: `Bearer ${ADMIN_TOKEN}` })
          .send({ name: `Racer ${index}`, email: `racer-${index}@acme.example`, entities: [] }),
      ),
    );
    expect(responses.map((response) => response.status)).toEqual(Array.from({ length: 8 }, () => 200));
    const final = await stored.get(RACED);
    expect(final?.email).toBeDefined();
    await withMongoPaused(async () => {
      expect(await identify(RACED)).toEqual(final);
      expect(await harness.services.contacts.findVerifiedUser({ externalId: 'u-x', email: final?.email ?? '' })).toEqual(final);
    });
  }, 30_000);

  /**
   * A second index over the same Redis and MongoDB whose upsert stops between its MongoDB write
   * and its Redis write until the test lets it go: the interleavings that a "write MongoDB, then
   * set the value it wrote in Redis" design gets wrong, in both orders.
   */
  function slowWriter() {
    let written!: () => void;
    let release!: () => void;
    const mongoWritten = new Promise<void>((resolve) => (written = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    const { services } = harness;
    const gated: ContactStore = {
      ...stored,
      async upsert(contact) {
        const result = await stored.upsert(contact);
        written();
        await released;
        return result;
      },
    };
    const index = createContactIndex(gated, { redis: services.redis, logger: services.logger, metrics: services.metrics, secret: 'test-people-secret' });
    return { index, mongoWritten, release };
  }

  test('a writer held between MongoDB and Redis while another writes after it: Redis ends with the later write, as MongoDB does', async () => {
    const slow = slowWriter();
    const first = slow.index.upsert(named('Held', 'held@acme.example'));
    await slow.mongoWritten;
    await harness.services.contacts.upsert(named('Later', 'later@acme.example'));
    slow.release();
    await first;
    expect(await stored.get(RACED)).toMatchObject({ name: 'Later' });
    await withMongoPaused(async () => {
      expect(await identify(RACED)).toMatchObject({ name: 'Later' });
      expect(await harness.services.contacts.findVerifiedUser({ externalId: 'u-x', email: 'later@acme.example' })).toMatchObject({ name: 'Later' });
      expect(await harness.services.contacts.findVerifiedUser({ externalId: 'u-x', email: 'held@acme.example' })).toBeUndefined();
    });
  }, 30_000);

  test('a writer held between MongoDB and Redis while another writes after it in MongoDB and finishes first: Redis ends with that last MongoDB write', async () => {
    const slow = slowWriter();
    const first = slow.index.upsert(named('Held again', 'held-again@acme.example'));
    await slow.mongoWritten;
    // Written to MongoDB after the held writer, and put in Redis before it.
    await harness.services.contacts.upsert(named('Last in MongoDB', 'last@acme.example'));
    slow.release();
    await first;
    expect(await stored.get(RACED)).toMatchObject({ name: 'Last in MongoDB' });
    await withMongoPaused(async () => {
      expect(await identify(RACED)).toMatchObject({ name: 'Last in MongoDB' });
      expect(await harness.services.contacts.findVerifiedUser({ externalId: 'u-x', email: 'held-again@acme.example' })).toBeUndefined();
    });
  }, 30_000);
});

describe('Redis lost its data', () => {
  test('the index is loaded again from MongoDB, and a linked customer is named again', async () => {
    // In MongoDB only (as a contacts collection from before the index was deployed).
    await stored.upsert({ address: 'whatsapp:+447700906020', name: 'Di Old', externalId: 'u-di', entities: [] });
    const [loaded, incomplete] = [events('contact-index-loaded'), events('contact-index-incomplete')];
    // Every primary when `npm run test:cluster` runs the service on a cluster.
    const { redis: service } = harness.services;
    await Promise.all((service instanceof Cluster ? service.nodes('master') : [service]).map((node) => node.flushall()));
    // Noticed at the next check: until the load is done, a lookup not in the index asks MongoDB.
    await eventually(() => events('contact-index-incomplete') > incomplete, 20_000);
    await eventually(() => events('contact-index-loaded') > loaded, 20_000);
    const failedBefore = lookupsFailed();
    await withMongoPaused(async () => {
      expect(await identify(ACME)).toMatchObject({ name: 'Ana Pérez', customerId: 'CUST-ACME' });
      expect(await identify('whatsapp:+447700906020')).toMatchObject({ name: 'Di Old' });
      expect(await harness.services.contacts.findVerifiedUser({ externalId: 'u-di' })).toMatchObject({ address: 'whatsapp:+447700906020' });
      expect(await harness.services.contacts.findVerifiedUser({ externalId: 'u-x', email: 'ana@acme.example' })).toMatchObject({ address: 'user:u-ana' });
      expect(await identify(NEVER_SEEN)).toBeUndefined();
    });
    expect(lookupsFailed() - failedBefore).toBe(0);
    expect(await ask(ACME, 'my invoices after the flush')).toContain(ACME_INVOICE);
  }, 60_000);
});

/**
 * Another process's index on a Redis of its own (the service's keeps answering meanwhile), over
 * the same MongoDB: what a lookup does before the index is known complete, and a load racing a
 * write.
 */
describe('an index not yet loaded', () => {
  const LOAD_LOCK = 'asst:contact-index-loading:{contact-index}';
  let spare: RedisHandle;
  let client: Redis;
  beforeAll(async () => {
    spare = await startRedis();
    client = new Redis(spare.url);
  });
  afterAll(async () => {
    await client.quit();
    await spare.stop();
  });

  function indexOn(store: ContactStore) {
    const logs: LogLine[] = [];
    const metrics = createMetrics();
    const logger = createLogger({ level: 'debug', sink: (line) => logs.push(JSON.parse(line) as LogLine) });
    return { index: createContactIndex(store, { redis: client, logger, metrics, secret: 'test-people-secret' }), logs, metrics };
  }

  test('while another process loads it, a caller missing from Redis is read from MongoDB (bounded); then the load completes it', async () => {
    await client.flushall();
    await client.set(LOAD_LOCK, 'another-process', 'PX', 60_000);
    const { index, logs, metrics } = indexOn(stored);
    await index.start();
    try {
      expect(await index.get(ACME)).toMatchObject({ name: 'Ana Pérez', customerId: 'CUST-ACME' });
      expect(await index.findVerifiedUser({ externalId: 'u-ana' })).toMatchObject({ address: 'user:u-ana' });
      expect(await index.get(NEVER_SEEN)).toBeUndefined();
      // Not in Redis and MongoDB does not answer: not linked after the bounded wait, and counted.
      expect(await withMongoPaused(() => index.get(ACME))).toBeUndefined();
      expect(metrics.value('contact_lookup_failed_total', { answered: 'anonymous' })).toBe(1);
      expect(metrics.gaugeValue('contact_index_complete')).toBe(0);
      // The other process dies: its lock expires (here: goes) and this one loads at its next check.
      await client.del(LOAD_LOCK);
      await eventually(() => logs.some((line) => line.event === 'contact-index-loaded'), 20_000);
      expect(metrics.gaugeValue('contact_index_complete')).toBe(1);
      await withMongoPaused(async () => {
        expect(await index.get(ACME)).toMatchObject({ name: 'Ana Pérez', customerId: 'CUST-ACME' });
        expect(await index.findVerifiedUser({ externalId: 'u-ana' })).toMatchObject({ address: 'user:u-ana' });
        expect(await index.get(NEVER_SEEN)).toBeUndefined();
      });
      expect(metrics.value('contact_lookup_failed_total', { answered: 'anonymous' })).toBe(1);
    } finally {
      index.close();
    }
  }, 60_000);

  test('a load that read a contact before it was removed does not bring it back', async () => {
    const GONE = 'whatsapp:+447700906030';
    await client.flushall();
    await stored.upsert({ address: GONE, name: 'Gone Soon', externalId: 'u-gone', entities: [] });
    let listed!: () => void;
    let release!: () => void;
    const pageRead = new Promise<void>((resolve) => (listed = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    let held = false;
    const slowLoad: ContactStore = {
      ...stored,
      async list(limit, after) {
        const page = await stored.list(limit, after);
        if (!held) {
          held = true;
          listed();
          await released;
        }
        return page;
      },
    };
    const loader = indexOn(slowLoad);
    const writer = indexOn(stored);
    await loader.index.start();
    try {
      await pageRead;
      expect(await writer.index.remove(GONE)).toBe(true);
      release();
      await eventually(() => loader.logs.some((line) => line.event === 'contact-index-loaded'), 20_000);
      await withMongoPaused(async () => {
        expect(await loader.index.get(GONE)).toBeUndefined();
        expect(await loader.index.findVerifiedUser({ externalId: 'u-gone' })).toBeUndefined();
        expect(await loader.index.get(ACME)).toMatchObject({ name: 'Ana Pérez' });
      });
    } finally {
      loader.index.close();
      writer.index.close();
    }
  }, 60_000);
});
