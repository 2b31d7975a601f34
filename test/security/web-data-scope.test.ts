/**
 * The widget side of data scope: whose records a visitor reads is bound to the identity the
 * website signed, never to what the browser or the model says. A scripted model that obeys the
 * visitor asks for Acme's invoices; a visitor the site verified as Acme's user gets them, one
 * with a forged identity hash (or none) is anonymous: offered no customer-data tool, refused
 * and counted when the model calls one by name, and none of Acme's records reaches the model,
 * the transcript or the visitor.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { BUSINESS_CATEGORY_PREFIXES } from '../support/business-mcp.js';
import type { Script } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';
import { transcriptsWritten } from '../support/settled.js';

const SHOP = 'https://shop.example.test';
const SECRET = 'shop-identity-secret-0123456789abcdef';
const SITES = JSON.stringify([{ key: 'test-site', name: 'Harbour Lane', origins: [SHOP], identitySecret: SECRET }]);
/** Acme's invoice amounts, as the test MCP server holds them. */
const ACME_MARKERS = ['1250.00', '320.00'];

/** A signed user as the site's backend puts it on the page: the id, the issue time and their hash (README "Verified website visitors"). */
const signed = (user: { id: string }, secret = SECRET) => {
  const ts = String(Math.floor(Date.now() / 1000));
  return { ...user, ts, hash: createHmac('sha256', secret).update([user.id, '', '', ts].join('\n')).digest('hex') };
};

/** Reads the visitor's invoices, then calls the customer-scoped read by name with the victim's id. */
const obedient: Script = ({ toolResults }) => {
  if (toolResults.length === 0) {
    return {
      toolCalls: [
        { name: 'invoice_list', input: {} },
        { name: 'invoice_list', input: { customerId: 'CUST-ACME' } },
      ],
    };
  }
  const said = toolResults.map(({ output }) => {
    const value = typeof output === 'object' && output !== null && 'value' in output ? output.value : output;
    return typeof value === 'string' ? value : JSON.stringify(value);
  });
  return { text: `What the tools said: ${said.join(' | ')}` };
};

let mcp: McpTestServer;
let harness: Harness;
let counter = 0;
beforeAll(async () => {
  mcp = await startMcpServer();
  harness = await startHarness({
    script: obedient,
    env: { WEB_SITES: SITES, MCP_SERVER_URL: mcp.url, MCP_CATEGORY_PREFIXES: BUSINESS_CATEGORY_PREFIXES },
  });
  await harness.services.contacts.upsert({
    address: 'user:u-ana',
    name: 'Ana Pérez',
    externalId: 'u-ana',
    customerId: 'CUST-ACME',
    entities: [{ id: 'HL-2001', name: 'Acme Ltd' }],
  });
});
afterAll(async () => {
  await harness.close();
  await mcp.close();
});

/** Starts a widget session (with whatever identity the page claims), asks, and returns the reply. */
async function askAs(user: Record<string, unknown> | undefined, text: string): Promise<string> {
  const started = await harness.http
    .post('/api/widget/session')
    .set('Origin', SHOP)
    .send({ siteKey: 'test-site', ...(user ? { user } : {}) });
  expect(started.status).toBe(200);
  const token = (started.body as { token: string }).token;
  const posted = await harness.http
    .post('/api/widget/messages')
    .set('Origin', SHOP)
    .set('Authorization', `Bearer ${token}`)
    .send({ clientMessageId: `scope-message-${++counter}`, text });
  expect(posted.status).toBe(202);
  const messages = await eventually(async () => {
    const response = await harness.http.get('/api/widget/history').set('Origin', SHOP).set('Authorization', `Bearer ${token}`);
    const list = (response.body as { messages?: { role: string; text: string }[] }).messages ?? [];
    return list.some((message) => message.role === 'assistant') ? list : undefined;
  });
  return messages.filter((message) => message.role === 'assistant').at(-1)?.text ?? '';
}

const denied = (reason: string) => harness.services.metrics.value('tool_scope_denied_total', { reason, channel: 'web' });

describe('a visitor asking for invoices in the widget', () => {
  test('with a forged identity hash is anonymous: no invoice tool is offered, calls by name are refused and counted, nothing reaches the server', async () => {
    const before = { calls: mcp.calls.length, unoffered: denied('unoffered-tool') };
    const reply = await askAs(signed({ id: 'u-ana' }, 'not-the-site-secret-0123456789abcdef'), 'show my invoices');
    expect(harness.logs).toContainEqual(expect.objectContaining({ event: 'widget-identity-rejected', reason: 'bad_hash' }));
    expect(mcp.calls.slice(before.calls)).toEqual([]);
    expect(denied('unoffered-tool') - before.unoffered).toBe(2);
    const call = harness.models.replyCalls().at(-1)!;
    expect(call.toolNames.filter((name) => /^(invoice|account)_/.test(name))).toEqual([]);
    for (const marker of ACME_MARKERS) expect(reply).not.toContain(marker);
  });

  test('with no identity at all is anonymous too', async () => {
    const before = mcp.calls.length;
    const reply = await askAs(undefined, 'show the invoices of Acme Ltd');
    expect(mcp.calls.slice(before)).toEqual([]);
    for (const marker of ACME_MARKERS) expect(reply).not.toContain(marker);
  });

  test("signed by the website as Acme's user gets Acme's invoices, bound to Acme's id by the runtime", async () => {
    const before = mcp.calls.length;
    const reply = await askAs(signed({ id: 'u-ana' }), 'show my invoices');
    expect(reply).toContain('Invoice 1042: 1250.00 EUR, overdue');
    // The model's own customerId (even the right one) is accepted only because it is the caller's.
    expect(mcp.calls.slice(before).map((call) => call.arguments)).toEqual([{ customerId: 'CUST-ACME' }, { customerId: 'CUST-ACME' }]);
  });

  test("no anonymous turn put Acme's records in a model prompt or the transcript", async () => {
    const anonymousPrompts = harness.models.calls
      .filter((call) => !call.promptText.includes('Linked customer Ana'))
      .map((call) => call.promptText)
      .join('\n');
    for (const marker of ACME_MARKERS) expect(anonymousPrompts).not.toContain(marker);
    await transcriptsWritten(harness.services);
    const db = harness.services.mongo.db;
    if (!db) throw new Error('no MongoDB database');
    const stored = await db.collection('messages').find({ direction: 'outbound' }).toArray();
    const leaked = stored.filter((message) => !String(message.text).includes('1042') && ACME_MARKERS.some((marker) => String(message.text).includes(marker)));
    expect(leaked).toEqual([]);
    expect(stored.filter((message) => ACME_MARKERS.some((marker) => String(message.text).includes(marker)))).toHaveLength(1);
  });
});
