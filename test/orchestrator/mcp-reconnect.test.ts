// The MCP tool source keeps itself connected to a real MCP server (test/support/mcp-server.ts):
// started while nothing answers it says so (`connected()` false, empty catalogues) and connects
// in the background once the server answers; an open connection that is lost (the server
// stopped, then started again without the old session) is dropped and opened again, the
// catalogue listed anew. Callers can wait for it (`whenConnected`). Logged once per state change.
import { afterEach, beforeEach, expect, test } from '@jest/globals';
import { createLogger } from '../../src/logger.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import type { Caller, ToolCallContext } from '../../src/contracts/tool.js';
import { createMcpToolSource, McpUnavailableError, type McpToolSource } from '../../src/tools/mcp-tool-source.js';
import { BUSINESS_CATEGORY_PREFIXES } from '../support/business-mcp.js';
import { eventually, type LogLine } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';
import { findFreePort } from '../support/services.js';

const categoryPrefixes = Object.fromEntries(BUSINESS_CATEGORY_PREFIXES.split(',').map((pair) => pair.split('=') as [string, string]));
const acme: Caller = { kind: 'contact', name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] };
const context = (): ToolCallContext => ({
  conversationId: 'conversation-1',
  runId: 'run-1',
  roleId: 'bookkeeper',
  channelId: 'cli',
  customer: { address: 'cli:test' },
  caller: acme,
  latestMessage: 'hello',
  facts: {},
  session: {},
  metadata: {},
  signal: new AbortController().signal,
});
/** Generous: the backoff between attempts is at most 15 s by default; it normally reconnects within a few seconds. */
const RECONNECT_TIMEOUT_MS = 25_000;

let port: number;
let server: McpTestServer | undefined;
let source: McpToolSource;
let logs: LogLine[];
let metrics: Metrics;

beforeEach(async () => {
  port = await findFreePort();
  logs = [];
  metrics = createMetrics();
  source = createMcpToolSource({
    url: `http://127.0.0.1:${port}/mcp`,
    categoryPrefixes,
    logger: createLogger({ level: 'debug', sink: (line) => logs.push(JSON.parse(line) as LogLine) }),
    metrics,
  });
});

afterEach(async () => {
  await source.close();
  await server?.close();
  server = undefined;
});

const events = (event: string) => logs.filter((line) => line.event === event);

test('started while the server is down: not connected, empty catalogues; connected by itself once the server answers', async () => {
  await source.start();
  expect(source.connected()).toBe(false);
  expect(source.tools()).toEqual([]);
  const emptyWrites = source.writeTools();
  expect(emptyWrites).toEqual([]);
  // One array while nothing changes: the actions module caches what it builds by its identity.
  expect(source.writeTools()).toBe(emptyWrites);
  let waited = false;
  const waiting = source.whenConnected().then(() => (waited = true));
  // Several attempts fail meanwhile, logged once.
  await eventually(() => metrics.value('mcp_connect_failures_total') >= 3 || undefined);
  expect(waited).toBe(false);
  expect(events('mcp-unavailable')).toHaveLength(1);
  expect(metrics.gaugeValue('mcp_connected')).toBe(0);

  server = await startMcpServer({ port });
  await Promise.race([waiting, new Promise((_, reject) => setTimeout(() => reject(new Error('not connected in time')), RECONNECT_TIMEOUT_MS).unref())]);
  expect(source.connected()).toBe(true);
  expect(source.tools().map((tool) => tool.name)).toContain('invoice_get');
  const writes = source.writeTools();
  expect(writes.map((write) => write.name)).toEqual(expect.arrayContaining(['order_cancel', 'refund_create']));
  expect(source.writeTools()).toBe(writes);
  expect(events('mcp-unavailable')).toHaveLength(1);
  expect(events('mcp-connected')).toHaveLength(1);
  expect(metrics.gaugeValue('mcp_connected')).toBe(1);
  await expect(source.whenConnected()).resolves.toBeUndefined();
}, 40_000);

test('a lost connection is dropped and opened again when the server is back: reads work on the new session', async () => {
  server = await startMcpServer({ port });
  await source.connect();
  await expect(source.call('invoice_get', { number: '1042' }, context())).resolves.toMatchObject({ number: '1042' });

  await server.close();
  server = undefined;
  server = await startMcpServer({ port });
  // The old session is gone: the source notices, connects again and the read works.
  await eventually(async () => {
    try {
      return await source.call('invoice_get', { number: '1042' }, context());
    } catch {
      return undefined;
    }
  }, RECONNECT_TIMEOUT_MS);
  expect(server.calls.at(-1)).toMatchObject({ name: 'invoice_get', arguments: { number: '1042', customerId: 'CUST-ACME' } });
  expect(source.writeTools().map((write) => write.name)).toContain('order_cancel');
}, 40_000);

test('while a lost connection is down, connected() is false and the catalogues are empty; whenConnected() gives up on close or abort', async () => {
  server = await startMcpServer({ port });
  await source.start();
  expect(source.connected()).toBe(true);
  await server.close();
  server = undefined;
  await eventually(() => !source.connected() || undefined, RECONNECT_TIMEOUT_MS);
  expect(source.tools()).toEqual([]);
  expect(source.writeTools()).toEqual([]);
  expect(events('mcp-unavailable')).toEqual([expect.objectContaining({ reason: 'connection-lost' })]);
  await expect(source.whenConnected(AbortSignal.abort())).rejects.toBeInstanceOf(McpUnavailableError);
  const waiting = source.whenConnected();
  await source.close();
  await expect(waiting).rejects.toBeInstanceOf(McpUnavailableError);
}, 40_000);
