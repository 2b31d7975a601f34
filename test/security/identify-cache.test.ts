/**
 * Who is talking, read from Redis instead of MongoDB on every turn (`contact-cache.ts`), and
 * still never a wrong caller. On a database of its own that the test pauses (SIGSTOP: every
 * request hangs): a warm lookup makes no MongoDB read; with MongoDB paused a linked number and a
 * website user are still named (fresh or stale entry) and an unknown number is anonymous, in
 * bounded time; an admin unlink, removal or external-id change takes effect on the next turn.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import type { mongo } from 'mongoose';
import { createCachedContactStore } from '../../src/contacts/contact-cache.js';
import { createContactStore } from '../../src/contacts/contact-store.js';
import type { InboundMessage } from '../../src/contracts/index.js';
import { BUSINESS_CATEGORY_PREFIXES } from '../support/business-mcp.js';
import type { Script } from '../support/deterministic-model.js';
import { newMessageSid, startHarness, type Harness } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';
import { startRestartableFerretDb, type RestartableMongoHandle } from '../support/services.js';

const ACME = 'whatsapp:+447700906001';
const UNLINKED_LATER = 'whatsapp:+447700906002';
const NEVER_SEEN = 'whatsapp:+447700906999';
const ADMIN_TOKEN = 'identify-cache-admin-token-0123456789';
const ACME_INVOICE = 'Invoice 1042: 1250.00 EUR, overdue, due 2026-11-15';

/** Lists the caller's invoices, then repeats what the tool said. */
const listInvoices: Script = ({ toolResults }) => {
  if (toolResults.length === 0) return { toolCalls: [{ name: 'invoice_list', input: {} }] };
  const said = toolResults.map(({ output }) => JSON.stringify(output));
  return { text: `What the tools said: ${said.join(' | ')}` };
};

const acme = (address: string) => ({ address, name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] });

let database: RestartableMongoHandle;
let mcp: McpTestServer;
let harness: Harness;
/** Every MongoDB command the service's driver started. */
const commands: mongo.CommandStartedEvent[] = [];

beforeAll(async () => {
  database = await startRestartableFerretDb();
  mcp = await startMcpServer();
  harness = await startHarness({
    script: listInvoices,
    env: {
      MONGODB_URI: `${database.uri}identify?monitorCommands=true`,
      MCP_SERVER_URL: mcp.url,
      MCP_CATEGORY_PREFIXES: BUSINESS_CATEGORY_PREFIXES,
      ADMIN_TOKEN,
    },
  });
  harness.services.mongo.getClient().on('commandStarted', (event) => commands.push(event));
  await harness.services.contacts.upsert(acme(ACME));
  await harness.services.contacts.upsert(acme(UNLINKED_LATER));
  await harness.services.contacts.upsert({ address: 'user:u-ana', name: 'Ana Pérez', customerId: 'CUST-ACME', email: 'ana@acme.example', entities: [] });
}, 60_000);
afterAll(async () => {
  database.resume();
  await harness.close();
  await mcp.close();
  await database.stop();
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

describe('a warm cache', () => {
  test('a turn of a linked customer reads no contact from MongoDB, and they read their own invoices', async () => {
    expect(await ask(ACME, 'my invoices please')).toContain(ACME_INVOICE);
    const before = contactReads();
    expect(await ask(ACME, 'my invoices again please')).toContain(ACME_INVOICE);
    expect(contactReads() - before).toBe(0);
  });
});

describe('MongoDB paused', () => {
  test('a linked number and a website user are still named, an unknown number is anonymous — never someone else', async () => {
    await identify(ACME);
    await harness.services.contacts.findVerifiedUser({ externalId: 'u-ana' });
    database.pause();
    try {
      expect(await identify(ACME)).toMatchObject({ name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] });
      expect(await harness.services.contacts.findVerifiedUser({ externalId: 'u-ana' })).toMatchObject({ address: 'user:u-ana', customerId: 'CUST-ACME' });
      // Never looked up before: nothing cached, MongoDB unreachable — treated as not linked.
      expect(await identify(NEVER_SEEN)).toBeUndefined();
      expect(harness.services.metrics.value('contact_lookup_failed_total', { answered: 'anonymous' })).toBe(1);
      expect(harness.logs).toContainEqual(expect.objectContaining({ event: 'contact-lookup-failed', answered: 'anonymous' }));
    } finally {
      database.resume();
    }
  }, 30_000);

  test('an entry past its freshness is re-read from MongoDB, and served stale while MongoDB does not answer', async () => {
    const { services } = harness;
    const shortLived = createCachedContactStore(createContactStore(services.mongo), {
      redis: services.redis,
      ttlSeconds: 1,
      logger: services.logger,
      metrics: services.metrics,
    });
    await shortLived.upsert(acme(ACME));
    expect(await shortLived.get(ACME)).toMatchObject({ customerId: 'CUST-ACME' });
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    database.pause();
    try {
      expect(await shortLived.get(ACME)).toMatchObject({ customerId: 'CUST-ACME' });
      expect(services.metrics.value('contact_lookup_failed_total', { answered: 'stale' })).toBe(1);
    } finally {
      database.resume();
    }
  }, 30_000);
});

describe('admin writes', () => {
  const admin = () => ({ Authorization: `Bearer ${ADMIN_TOKEN}` });

  test('an unlink takes effect on the next turn, and so does a removal', async () => {
    expect(await ask(UNLINKED_LATER, 'my invoices please')).toContain(ACME_INVOICE);
    const unlinked = await harness.http.put(`/admin/contacts/${UNLINKED_LATER}`).set(admin()).send({ name: 'Ana Pérez', entities: [] });
    expect(unlinked.status).toBe(200);
    expect(await identify(UNLINKED_LATER)).toEqual({ address: UNLINKED_LATER, name: 'Ana Pérez', entities: [] });
    expect(await ask(UNLINKED_LATER, 'my invoices once more')).not.toContain(ACME_INVOICE);

    expect((await harness.http.delete(`/admin/contacts/${UNLINKED_LATER}`).set(admin())).status).toBe(204);
    expect(await identify(UNLINKED_LATER)).toBeUndefined();
  });

  test('a website user whose external id moves is found by the new id at once, and no longer by the old', async () => {
    expect(await harness.services.contacts.findVerifiedUser({ externalId: 'u-ana' })).toMatchObject({ address: 'user:u-ana' });
    await harness.services.contacts.upsert({ address: 'whatsapp:+447700906003', name: 'Bo Chen', externalId: 'u-bo', entities: [] });
    expect(await harness.services.contacts.findVerifiedUser({ externalId: 'u-bo' })).toMatchObject({ name: 'Bo Chen' });
    const moved = await harness.http.put('/admin/contacts/whatsapp:+447700906003').set(admin()).send({ name: 'Bo Chen', externalId: 'u-bo-2', entities: [] });
    expect(moved.status).toBe(200);
    expect(await harness.services.contacts.findVerifiedUser({ externalId: 'u-bo' })).toBeUndefined();
    expect(await harness.services.contacts.findVerifiedUser({ externalId: 'u-bo-2' })).toMatchObject({ name: 'Bo Chen' });
  });
});
