/**
 * The business's MCP server is a dependency the service reconnects to, never one it needs to
 * start: a service started while nothing answers at MCP_SERVER_URL serves at once, `/readyz` says
 * `mcp` is `degraded` (still 200) and turns are offered none of the business's tools; once the
 * server answers on that port the service connects in the background (no restart), `/readyz` is
 * ready and turns are offered its reads and writes again. The same after an open connection is
 * lost (the server stopped, then started again without the old session). Each outage is logged
 * once, however many attempts it takes. Real Redis, FerretDB, MCP server and fake Twilio.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { BUSINESS_CATEGORY_PREFIXES } from '../support/business-mcp.js';
import { judgeRoutingTo, type Script } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';
import { findFreePort } from '../support/services.js';

const ANA = 'whatsapp:+447700908001';
/** Generous: the service's backoff between attempts is at most 15 s; it normally reconnects within a few seconds. */
const RECONNECT_TIMEOUT_MS = 25_000;

/** The tools each reply call was offered, in order. */
const offered: string[][] = [];
const model: Script = ({ userText, toolNames, toolResults }) => {
  offered.push(toolNames);
  if (userText.includes('do:invoice') && toolResults.length === 0) return { toolCalls: [{ name: 'invoice_get', input: { number: '1042' } }] };
  if (toolResults.length > 0) return { text: `Tools said: ${JSON.stringify(toolResults.map((result) => result.output))}` };
  return { text: `Answer to: ${userText.slice(-40)}` };
};

let port: number;
let harness: Harness;
let mcp: McpTestServer | undefined;

beforeAll(async () => {
  port = await findFreePort();
  harness = await startHarness({
    script: model,
    env: { MCP_SERVER_URL: `http://127.0.0.1:${port}/mcp`, MCP_CATEGORY_PREFIXES: BUSINESS_CATEGORY_PREFIXES },
  });
  harness.models.setJudge(judgeRoutingTo('bookkeeper'));
  await harness.services.contacts.upsert({ address: ANA, name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] });
});

afterAll(async () => {
  await harness?.close();
  await mcp?.close();
});

const readiness = async () => {
  const response = await harness.http.get('/readyz');
  return { status: response.status, body: response.body as { status: string; checks: Record<string, string> } };
};

/** Sends a message and returns the reply and the tools the reply call was offered. */
async function say(body: string): Promise<{ reply: string; tools: string[] }> {
  const before = harness.twilio.messages.length;
  const calls = offered.length;
  await harness.sendWhatsapp({ from: ANA, body });
  const messages = await harness.twilio.waitForMessages(before + 1, 10_000);
  return { reply: messages.at(-1)?.body ?? '', tools: offered[calls] ?? [] };
}

const events = (event: string) => harness.logs.filter((line) => line.event === event);

describe('the MCP server unreachable', () => {
  test('at start: /readyz says mcp degraded and no business tool is offered; once it answers the service connects by itself', async () => {
    expect(await readiness()).toMatchObject({ status: 200, body: { status: 'degraded', checks: { redis: 'ok', mcp: 'degraded' } } });
    const down = await say('hello, what do I owe?');
    expect(down.tools).not.toContain('invoice_get');
    expect(down.tools).not.toContain('order_cancel');

    mcp = await startMcpServer({ port });
    const ready = await eventually(async () => {
      const state = await readiness();
      return state.body.checks.mcp === 'ok' ? state : undefined;
    }, RECONNECT_TIMEOUT_MS);
    expect(ready.status).toBe(200);
    expect(ready.body.checks.mcp).toBe('ok');

    // Reads and writes are offered again, and a read reaches the server.
    const up = await say('do:invoice what about invoice 1042?');
    expect(up.tools).toEqual(expect.arrayContaining(['invoice_get', 'order_cancel']));
    expect(up.reply).toContain('1250.00');
    // One line for the outage and one for its end, however many attempts it took.
    expect(events('mcp-unavailable')).toHaveLength(1);
    expect(events('mcp-connected')).toHaveLength(1);
    expect(harness.services.metrics.value('mcp_connect_failures_total')).toBeGreaterThanOrEqual(1);
  }, 60_000);

  test('after a lost connection: degraded while the server is gone, reconnected to a new session when it is back', async () => {
    if (!mcp) throw new Error('the previous test did not start the MCP server');
    await mcp.close();
    mcp = undefined;
    await eventually(async () => ((await readiness()).body.checks.mcp === 'degraded' ? true : undefined), RECONNECT_TIMEOUT_MS);
    const down = await say('hello again');
    expect(down.tools).not.toContain('invoice_get');

    mcp = await startMcpServer({ port });
    await eventually(async () => ((await readiness()).body.checks.mcp === 'ok' ? true : undefined), RECONNECT_TIMEOUT_MS);
    const up = await say('do:invoice and invoice 1042 now?');
    expect(up.tools).toEqual(expect.arrayContaining(['invoice_get', 'order_cancel']));
    expect(up.reply).toContain('1250.00');
    expect(mcp.calls.map((call) => call.name)).toEqual(['invoice_get']);
    expect(events('mcp-unavailable')).toHaveLength(2);
    expect(events('mcp-unavailable').at(-1)).toMatchObject({ reason: 'connection-lost' });
    expect(events('mcp-connected')).toHaveLength(2);
  }, 60_000);
});
