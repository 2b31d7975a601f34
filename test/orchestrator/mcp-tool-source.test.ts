// The MCP tool source against a real MCP server (test/support/mcp-server.ts): only reads are
// admitted, with the right effect and category; writes are refused at the connection and never
// reach the server; a customer-data read is admitted only with its scoped arguments, which are
// hidden from the model and bound to the verified caller; results are parsed and capped;
// failures are typed.
import { createServer, type AddressInfo } from 'node:net';
import { createLogger } from '../../src/logger.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import { ANONYMOUS_CALLER } from '../../src/tools/caller.js';
import { ToolScopeError } from '../../src/tools/scope.js';
import type { Caller, ToolCallContext } from '../../src/contracts/tool.js';
import {
  createMcpToolSource,
  deriveToolEffect,
  McpToolCallError,
  McpUnavailableError,
  type McpToolSource,
  type McpToolSourceOptions,
} from '../../src/tools/mcp-tool-source.js';
import { eventually, type LogLine } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';

const categoryPrefixes = { invoice_: 'billing', plan_: 'sales', plan_get_: 'pricing', help_: 'support', account_: 'crm', catalog_: 'catalog' };
const publicCategories = ['pricing', 'support', 'catalog'];

const acme: Caller = {
  kind: 'contact',
  name: 'Ana Pérez',
  customerId: 'CUST-ACME',
  entities: [{ id: 'HL-2001', name: 'Acme Ltd' }],
  entity: { id: 'HL-2001', name: 'Acme Ltd' },
};

const context = (caller: Caller = acme): ToolCallContext => ({
  conversationId: 'conversation-1',
  runId: 'run-1',
  roleId: 'support',
  channelId: 'cli',
  customer: { address: 'cli:test' },
  caller,
  latestMessage: 'hello',
  facts: {},
  session: {},
  metadata: {},
  signal: new AbortController().signal,
});

describe('deriveToolEffect', () => {
  it.each([
    [{ readOnlyHint: true }, 'read'],
    [{ readOnlyHint: true, destructiveHint: true }, 'read'],
    [{ readOnlyHint: false, destructiveHint: true }, 'irreversible'],
    [{ readOnlyHint: false, destructiveHint: false }, 'reversible'],
    [{ destructiveHint: false }, 'reversible'],
    [{}, 'irreversible'],
    [undefined, 'irreversible'],
  ] as const)('%j → %s', (annotations, effect) => {
    expect(deriveToolEffect(annotations)).toBe(effect);
  });
});

describe('createMcpToolSource', () => {
  let server: McpTestServer;
  let source: McpToolSource | undefined;
  let logs: LogLine[];
  let metrics: Metrics;

  const open = async (overrides: Partial<McpToolSourceOptions> = {}): Promise<McpToolSource> => {
    source = createMcpToolSource({
      url: server.url,
      categoryPrefixes,
      publicCategories,
      logger: createLogger({ level: 'debug', sink: (line) => logs.push(JSON.parse(line) as LogLine) }),
      metrics,
      ...overrides,
    });
    await source.connect();
    return source;
  };

  const admittedTool = (name: string) => {
    const tool = source?.tools().find((candidate) => candidate.name === name);
    if (!tool) throw new Error(`${name} was not admitted`);
    return tool;
  };

  beforeEach(async () => {
    logs = [];
    metrics = createMetrics();
    server = await startMcpServer();
  });

  afterEach(async () => {
    await source?.close();
    source = undefined;
    await server.close();
  });

  it('admits only the reads, each with effect read and the category its metadata or name gives', async () => {
    const tools = (await open()).tools();
    expect(tools.map((tool) => [tool.name, tool.effect, tool.category, tool.origin])).toEqual([
      ['invoice_get', 'read', 'billing', 'mcp'],
      ['invoice_list', 'read', 'billing', 'mcp'],
      // The longest matching prefix wins.
      ['plan_get_pricing', 'read', 'pricing', 'mcp'],
      ['help_search_articles', 'read', 'support', 'mcp'],
      // `_meta.category` beats the `account_` prefix.
      ['account_get_status', 'read', 'account', 'mcp'],
    ]);
    expect(admittedTool('invoice_get').inputSchema).toEqual({
      jsonSchema: expect.objectContaining({ type: 'object', required: ['number'] }),
    });
    const refused = logs.filter((line) => line.event === 'mcp-tool-refused');
    expect(refused).toEqual([expect.objectContaining({ level: 'debug', count: 3 })]);
  });

  it('refuses a customer-data read that declares no scoped argument, and says so once per listing', async () => {
    const tools = (await open()).tools();
    expect(tools.map((tool) => tool.name)).not.toContain('account_find_by_company');
    expect(logs.filter((line) => line.event === 'mcp-tool-unscoped')).toEqual([
      expect.objectContaining({ level: 'warn', count: 1, names: ['account_find_by_company'] }),
    ]);
    await expect(source!.call('account_find_by_company', { company: 'Borealis Bakery' }, context())).rejects.toMatchObject({ reason: 'not-admitted' });
    expect(server.calls).toEqual([]);
  });

  it('hides scoped arguments from the model and marks whose data each read returns', async () => {
    await open();
    expect(admittedTool('invoice_get')).toMatchObject({
      access: { kind: 'caller', arguments: { customerId: 'customer' } },
      inputSchema: { jsonSchema: expect.objectContaining({ required: ['number'] }) },
    });
    const schema = (admittedTool('invoice_get').inputSchema as { jsonSchema: { properties: Record<string, unknown> } }).jsonSchema;
    expect(Object.keys(schema.properties)).toEqual(['number']);
    expect(admittedTool('account_get_status')).toMatchObject({
      access: { kind: 'caller', arguments: { accountId: 'entity' } },
      inputSchema: { jsonSchema: expect.objectContaining({ properties: {} }) },
    });
    expect(admittedTool('plan_get_pricing').access).toEqual({ kind: 'public' });
  });

  it("binds the caller's own ids into the call and sends the caller in the request's _meta", async () => {
    await open();
    await admittedTool('account_get_status').execute({}, context());
    // An argument the model's schema doesn't declare (a name) is never sent to a scoped read.
    await admittedTool('invoice_list').execute({ customer: 'Borealis Bakery' }, context());
    expect(server.calls).toEqual([
      {
        name: 'account_get_status',
        arguments: { accountId: 'HL-2001' },
        meta: { 'wa-assistant/caller': { verified: true, customerId: 'CUST-ACME', entityId: 'HL-2001' } },
      },
      {
        name: 'invoice_list',
        arguments: { customerId: 'CUST-ACME' },
        meta: { 'wa-assistant/caller': { verified: true, customerId: 'CUST-ACME', entityId: 'HL-2001' } },
      },
    ]);
  });

  it.each([
    ['another customer id', 'invoice_list', { customerId: 'CUST-BOREALIS' }, acme, 'scoped-argument'],
    ['an account the contact does not hold', 'account_get_status', { accountId: 'HL-3001' }, acme, 'entity-not-held'],
    ['an anonymous caller', 'invoice_get', { number: '1051' }, ANONYMOUS_CALLER, 'no-identity'],
    ['a contact with no customer id', 'invoice_list', {}, { ...acme, customerId: undefined }, 'no-identity'],
    [
      'a contact with two accounts and none selected',
      'account_get_status',
      {},
      {
        kind: 'contact',
        name: 'Ana',
        customerId: 'CUST-ACME',
        entities: [
          { id: 'HL-2001', name: 'Acme Ltd' },
          { id: 'HL-2002', name: 'Acme Iberia SL' },
        ],
      },
      'not-selected',
    ],
  ] as const)('refuses %s without reaching the server', async (_case, name, input, caller, reason) => {
    await open();
    const call = admittedTool(name).execute(input, context(caller));
    await expect(call).rejects.toBeInstanceOf(ToolScopeError);
    await expect(call).rejects.toMatchObject({ reason });
    expect(server.calls).toEqual([]);
    expect(metrics.value('mcp_calls_total', { tool: name, outcome: 'scope_denied' })).toBe(1);
  });

  it('refuses a read whose scope declaration is malformed, even in a public category', async () => {
    await open({ publicCategories: [...publicCategories, 'billing'], scopeArguments: { invoice_list: { customerId: 'company' as 'customer' } } });
    expect(source!.tools().map((tool) => tool.name)).not.toContain('invoice_list');
    expect(logs.filter((line) => line.event === 'mcp-tool-unscoped')).toEqual([
      expect.objectContaining({ names: ['invoice_list', 'account_find_by_company'] }),
    ]);
  });

  it("binds the arguments an operator's mapping names, for a server whose metadata declares none", async () => {
    await open({ scopeArguments: { account_find_by_company: { company: 'customer' } } });
    const tool = admittedTool('account_find_by_company');
    expect(tool.access).toEqual({ kind: 'caller', arguments: { company: 'customer' } });
    await expect(tool.execute({ company: 'Borealis Bakery' }, context())).rejects.toMatchObject({ reason: 'scoped-argument' });
    expect(server.calls).toEqual([]);
  });

  it('gives a tool with neither metadata nor a matching prefix the default category', async () => {
    await open({ categoryPrefixes: { invoice_: 'billing' }, publicCategories: ['general'] });
    expect(admittedTool('help_search_articles').category).toBe('general');
    await source?.close();
    await open({ categoryPrefixes: {}, defaultCategory: 'business', publicCategories: ['business'] });
    expect(admittedTool('plan_get_pricing').category).toBe('business');
    expect(admittedTool('account_get_status').category).toBe('account');
  });

  it.each(['invoice_issue_refund', 'account_update_email', 'plan_change'])('refuses a call to the write tool %s without reaching the server', async (name) => {
    const opened = await open();
    await expect(opened.call(name, { accountId: 'HL-2001' }, context())).rejects.toMatchObject({
      name: 'McpToolCallError',
      reason: 'not-admitted',
      message: expect.stringContaining(name),
    });
    expect(server.calls).toEqual([]);
    expect(metrics.value('mcp_calls_total', { tool: name, outcome: 'refused' })).toBe(1);
  });

  it('returns the data a read gives: structured content when sent, else the text', async () => {
    await open();
    await expect(admittedTool('invoice_get').execute({ number: '1042' }, context())).resolves.toEqual({
      number: '1042',
      customer: 'Acme Ltd',
      amount: '1250.00',
      currency: 'EUR',
      status: 'overdue',
      dueDate: '2026-11-15',
    });
    const pricing = await admittedTool('plan_get_pricing').execute({}, context());
    expect(pricing).toBe('Starter: 19 EUR/month, up to 3 seats\nPro: 49 EUR/month, up to 15 seats\nBusiness: 99 EUR/month, up to 50 seats');
    expect(server.calls.map(({ name, arguments: args }) => ({ name, arguments: args }))).toEqual([
      { name: 'invoice_get', arguments: { number: '1042', customerId: 'CUST-ACME' } },
      { name: 'plan_get_pricing', arguments: {} },
    ]);
    expect(metrics.value('mcp_calls_total', { tool: 'invoice_get', outcome: 'success' })).toBe(1);
  });

  it('caps a result over the limit, marker included', async () => {
    await open({ resultCharCap: 200 });
    const result = await admittedTool('help_search_articles').execute({ query: 'your' }, context());
    expect(typeof result).toBe('string');
    const capped = String(result);
    expect(capped.length).toBeLessThanOrEqual(200);
    expect(capped.startsWith('Resetting your password\n')).toBe(true);
    expect(capped).toMatch(/…\[truncated: result was \d+ characters\]$/);
  });

  it('throws with the text of a result flagged isError', async () => {
    await open();
    const failure = admittedTool('invoice_get').execute({ number: '9999' }, context());
    await expect(failure).rejects.toBeInstanceOf(McpToolCallError);
    await expect(failure).rejects.toMatchObject({ reason: 'tool-error', message: expect.stringContaining('Invoice 9999 was not found.') });
    expect(metrics.value('mcp_calls_total', { tool: 'invoice_get', outcome: 'tool_error' })).toBe(1);
  });

  it('refuses a non-object input without calling the server', async () => {
    await open();
    await expect(admittedTool('invoice_list').execute('Acme Ltd', context())).rejects.toMatchObject({ reason: 'invalid-input' });
    expect(server.calls).toEqual([]);
  });

  it('does not call the server once the turn is aborted', async () => {
    await open();
    const controller = new AbortController();
    controller.abort(new Error('turn cancelled'));
    await expect(admittedTool('invoice_get').execute({ number: '1042' }, { ...context(), signal: controller.signal })).rejects.toMatchObject({
      reason: 'call-failed',
    });
    expect(server.calls).toEqual([]);
    expect(metrics.value('mcp_calls_total', { tool: 'invoice_get', outcome: 'aborted' })).toBe(1);
  });

  it('drops a tool the server re-annotates as a write, even for a caller still holding it', async () => {
    await open();
    const stale = admittedTool('invoice_list');
    await server.changeAnnotations('invoice_list', { readOnlyHint: false, destructiveHint: true });
    await eventually(() => source?.tools().every((tool) => tool.name !== 'invoice_list'));
    await expect(stale.execute({ customer: 'Acme Ltd' }, context())).rejects.toMatchObject({ reason: 'not-admitted' });
    expect(server.calls).toEqual([]);
  });

  it('lists 2,000 extra tools across pages', async () => {
    await server.close();
    server = await startMcpServer({ extraReadTools: 2000 });
    // How long a listing takes is the benchmark's business (npm run bench:budget), not a test's.
    const tools = (await open()).tools();
    expect(tools).toHaveLength(2005);
    expect(tools.at(-1)).toMatchObject({ name: 'catalog_item_2000', category: 'catalog', effect: 'read' });
    await expect(admittedTool('catalog_item_1999').execute({}, context())).resolves.toBe('Item 1999: 4 in stock, 54.00 EUR');
  });
});

describe('createMcpToolSource without a server', () => {
  it('throws McpUnavailableError when nothing listens at the URL', async () => {
    // A port that was free a moment ago: bound, read, released.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));

    const source = createMcpToolSource({
      url: `http://127.0.0.1:${port}/mcp?key=not-for-logs`,
      categoryPrefixes,
      logger: createLogger({ sink: () => undefined }),
      metrics: createMetrics(),
    });
    const connecting = source.connect();
    await expect(connecting).rejects.toBeInstanceOf(McpUnavailableError);
    await expect(connecting).rejects.toMatchObject({ name: 'McpUnavailableError', message: expect.not.stringContaining('not-for-logs') });
    expect(source.tools()).toEqual([]);
  });

  it('start() never throws: it logs mcp-unavailable once and keeps trying until closed', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const logs: LogLine[] = [];
    const metrics = createMetrics();
    const source = createMcpToolSource({
      url: `http://127.0.0.1:${port}/mcp`,
      categoryPrefixes,
      logger: createLogger({ sink: (line) => logs.push(JSON.parse(line) as LogLine) }),
      metrics,
      retry: { firstMs: 10, maxMs: 20 },
    });
    await expect(source.start()).resolves.toBeUndefined();
    await eventually(() => metrics.value('mcp_connect_failures_total') >= 3);
    expect(logs.filter((line) => line.event === 'mcp-unavailable')).toHaveLength(1);
    await source.close();
    const failures = metrics.value('mcp_connect_failures_total');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(metrics.value('mcp_connect_failures_total')).toBe(failures);
    expect(source.tools()).toEqual([]);
  });
});
