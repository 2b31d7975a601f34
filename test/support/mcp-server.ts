// Owns a real MCP server for tests: the SDK's McpServer behind its Streamable HTTP transport
// (one session per client, so `tools/list_changed` reaches the client on its GET stream),
// served by node:http on 127.0.0.1. It serves the business data of Harbour Lane Software, a
// fictional SaaS company: reads across categories; write tools that declare no scope and the
// service must never offer or call; and scoped write tools (reschedule a delivery, cancel an
// order, set a delivery slot — an argument whose schema is an enum —, create a payment link, an
// irreversible refund) it offers as confirmed actions, which
// answer a repeated idempotency key with the first call's result (`applied` lists real effects).
// Its customers are three companies (Acme Ltd, Borealis Bakery, Cirrus Freight): the customer-data reads take the customer or account they read as an argument and declare it
// in `_meta.scopeArguments`, so the service binds it to the verified caller; one customer-data
// read declares nothing and must be refused. The server itself does not check who asks — the
// tests prove the service never lets a caller name someone else. Every `tools/call` that arrives
// (arguments and `_meta`) is recorded before the SDK sees it, so a test can assert what reached
// it. It must never be used outside tests.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  ErrorCode,
  isInitializeRequest,
  ListToolsRequestSchema,
  McpError,
  ToolSchema,
  type CallToolResult,
  type Tool,
  type ToolAnnotations,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

/** Tools per `tools/list` page: McpServer lists in one page, so this server pages itself. */
const TOOLS_PAGE_SIZE = 500;

export interface RecordedToolCall {
  name: string;
  arguments: Record<string, unknown> | undefined;
  /** The request's `_meta` (where the service says who the caller is). */
  meta: Record<string, unknown> | undefined;
}

/** One order of the business's customers (what the write tools change). */
export interface Order {
  number: string;
  customer: string;
  deliveryDate: string;
  /** Set by `order_set_delivery_slot` (one of its enum's values). */
  deliverySlot?: string;
  status: 'open' | 'cancelled';
}

/** A write that took effect: the tool, its arguments and the idempotency key it came with. */
export interface AppliedWrite {
  tool: string;
  arguments: Record<string, unknown>;
  idempotencyKey: string | undefined;
}

export interface McpTestServer {
  url: string;
  /** Every `tools/call` request received, in order, whether or not the tool exists. */
  calls: RecordedToolCall[];
  /** Writes that changed something (a repeated idempotency key answers without a second effect). */
  applied: AppliedWrite[];
  /** The orders as the writes left them. */
  orders(): Order[];
  /** Payment links created and refunds made, as the writes left them. */
  paymentLinks(): { number: string; url: string }[];
  refunds(): { number: string; amount: string }[];
  /** The next write of `tool` takes effect, then holds its answer until `release()` (a run whose outcome is lost). */
  holdNextWrite(tool: string): { reached: Promise<void>; release(): void };
  /**
   * The next write of `tool` works until `release()` before it takes effect, and notes its
   * idempotency key only then (as a server that records keys on completion): a call with the
   * same key meanwhile is not known yet, and takes effect too.
   */
  slowNextWrite(tool: string): { reached: Promise<void>; release(): void };
  /** Replaces a tool's annotations and tells every connected client its tool list changed. */
  changeAnnotations(name: string, annotations: ToolAnnotations): Promise<void>;
  close(): Promise<void>;
}

interface FixtureTool {
  name: string;
  description: string;
  inputSchema: z.ZodObject;
  annotations: ToolAnnotations | undefined;
  meta: Record<string, unknown> | undefined;
  title?: string | undefined;
  run(args: unknown): CallToolResult;
}

function fixtureTool<Shape extends z.ZodRawShape>(definition: {
  name: string;
  description: string;
  input: Shape;
  annotations?: ToolAnnotations;
  meta?: Record<string, unknown>;
  title?: string;
  run(args: z.infer<z.ZodObject<Shape>>): CallToolResult;
}): FixtureTool {
  const inputSchema = z.object(definition.input);
  return {
    title: definition.title,
    name: definition.name,
    description: definition.description,
    inputSchema,
    annotations: definition.annotations,
    meta: definition.meta,
    run: (args) => definition.run(inputSchema.parse(args)),
  };
}

const text = (value: string): CallToolResult => ({ content: [{ type: 'text', text: value }] });
const failure = (value: string): CallToolResult => ({ content: [{ type: 'text', text: value }], isError: true });
const readOnly: ToolAnnotations = { readOnlyHint: true };

interface Invoice {
  number: string;
  customer: string;
  amount: string;
  currency: 'EUR';
  status: 'paid' | 'open' | 'overdue';
  dueDate: string;
}

/** The business's customers: id → company name. */
const CUSTOMERS = { 'CUST-ACME': 'Acme Ltd', 'CUST-BOREALIS': 'Borealis Bakery', 'CUST-CIRRUS': 'Cirrus Freight' } as const;

const invoices: readonly Invoice[] = [
  { number: '1042', customer: 'Acme Ltd', amount: '1250.00', currency: 'EUR', status: 'overdue', dueDate: '2026-11-15' },
  { number: '1043', customer: 'Acme Ltd', amount: '320.00', currency: 'EUR', status: 'paid', dueDate: '2026-10-01' },
  { number: '1051', customer: 'Borealis Bakery', amount: '4815.16', currency: 'EUR', status: 'open', dueDate: '2019-12-01' },
  { number: '1052', customer: 'Borealis Bakery', amount: '2342.00', currency: 'EUR', status: 'overdue', dueDate: '2019-09-30' },
  { number: '1061', customer: 'Cirrus Freight', amount: '777.70', currency: 'EUR', status: 'open', dueDate: '2019-01-15' },
];

const customerName = (customerId: string): string | undefined => (CUSTOMERS as Record<string, string>)[customerId];

const plans = [
  { name: 'Starter', monthlyPrice: 19, seats: 3 },
  { name: 'Pro', monthlyPrice: 49, seats: 15 },
  { name: 'Business', monthlyPrice: 99, seats: 50 },
] as const;

const articles = [
  {
    title: 'Resetting your password',
    snippet: 'Open Settings, then Security, and choose "Reset password". A reset link valid for 30 minutes is emailed to the address on your account.',
  },
  {
    title: 'Downloading an invoice as PDF',
    snippet: 'Every invoice under Billing has a PDF button; the file carries your company details as they were on the invoice date.',
  },
  {
    title: 'Moving to another plan',
    snippet: 'Plan changes take effect at once; the price difference for the rest of your billing month is added to your next invoice.',
  },
  {
    title: 'Inviting a team member',
    snippet: 'Owners and admins can invite people from Team settings; each invitation uses a seat of your plan once it is accepted.',
  },
  {
    title: 'Exporting your data',
    snippet: 'Settings, then Data export, builds a ZIP of your records; the download link is emailed to you and stays valid for seven days.',
  },
] as const;

const accounts = new Map([
  ['HL-2001', { accountId: 'HL-2001', company: 'Acme Ltd', status: 'active', plan: 'Pro', seatsUsed: 12 }],
  ['HL-2002', { accountId: 'HL-2002', company: 'Acme Iberia SL', status: 'active', plan: 'Starter', seatsUsed: 3 }],
  ['HL-3001', { accountId: 'HL-3001', company: 'Borealis Bakery', status: 'suspended', plan: 'Business', seatsUsed: 41 }],
  ['HL-4001', { accountId: 'HL-4001', company: 'Cirrus Freight', status: 'active', plan: 'Pro', seatsUsed: 9 }],
]);

/**
 * Strings only the other companies' records hold: none may ever reach a caller linked to Acme Ltd.
 * Their due dates lie in a year no test runs in: a date of this year was also in every stored
 * document's `createdAt` on that day (the test failed on 2026-12-01).
 */
export const NOT_ACME_MARKERS = ['4815.16', '2342.00', '2019-12-01', '2019-09-30', 'suspended', '"seatsUsed":41', '777.70', '2019-01-15'] as const;

const customerScope = { scopeArguments: { customerId: 'customer' } };

/** What the write tools change: per server, so each test file starts from the same data. */
interface BusinessState {
  orders: Map<string, Order>;
  paymentLinks: { number: string; url: string }[];
  refunds: { number: string; amount: string }[];
}

function initialState(): BusinessState {
  return {
    orders: new Map([
      ['5001', { number: '5001', customer: 'Acme Ltd', deliveryDate: '2026-12-10', status: 'open' }],
      ['5002', { number: '5002', customer: 'Acme Ltd', deliveryDate: '2026-12-12', status: 'open' }],
      ['6001', { number: '6001', customer: 'Borealis Bakery', deliveryDate: '2026-12-11', status: 'open' }],
      ['7001', { number: '7001', customer: 'Cirrus Freight', deliveryDate: '2026-12-14', status: 'open' }],
    ]),
    paymentLinks: [],
    refunds: [],
  };
}

const reversibleWrite = (title: string): ToolAnnotations => ({ readOnlyHint: false, destructiveHint: false, idempotentHint: true, title });

/**
 * Writes the service may offer as confirmed actions: each declares the customer it acts for in
 * `_meta.scopeArguments` (bound by the service to the verified caller) and acts only on that
 * customer's own records. Four are reversible, the refund irreversible.
 */
function actionTools(state: BusinessState): FixtureTool[] {
  const ownOrder = (number: string, customerId: string) => {
    const order = state.orders.get(number);
    return order && order.customer === customerName(customerId) ? order : undefined;
  };
  return [
    fixtureTool({
      name: 'order_reschedule_delivery',
      title: 'Reschedule a delivery',
      description: "Moves the delivery of one of the customer's open orders to another date.",
      input: {
        orderNumber: z.string().regex(/^\d+$/).describe('Order number, e.g. 5001'),
        date: z
          .string()
          .regex(/^\d{4}-\d{2}-\d{2}$/)
          .meta({ title: 'New delivery date' })
          .describe('YYYY-MM-DD'),
        customerId: z.string().min(1),
      },
      annotations: reversibleWrite('Reschedule a delivery'),
      meta: { category: 'account', ...customerScope },
      run: ({ orderNumber, date, customerId }) => {
        const order = ownOrder(orderNumber, customerId);
        if (!order) return failure(`Order ${orderNumber} was not found.`);
        if (order.status !== 'open') return failure(`Order ${orderNumber} is ${order.status}; its delivery can't be moved.`);
        order.deliveryDate = date;
        return text(`The delivery of order ${orderNumber} is now on ${date}.`);
      },
    }),
    fixtureTool({
      name: 'order_set_delivery_slot',
      title: 'Set a delivery slot',
      description: "Sets the time of day one of the customer's open orders is delivered.",
      input: {
        orderNumber: z.string().regex(/^\d+$/),
        slot: z.enum(['morning', 'afternoon', 'evening']).meta({ title: 'Delivery slot' }),
        customerId: z.string().min(1),
      },
      annotations: reversibleWrite('Set a delivery slot'),
      meta: { category: 'account', ...customerScope },
      run: ({ orderNumber, slot, customerId }) => {
        const order = ownOrder(orderNumber, customerId);
        if (!order) return failure(`Order ${orderNumber} was not found.`);
        order.deliverySlot = slot;
        return text(`Order ${orderNumber} is now delivered in the ${slot}.`);
      },
    }),
    fixtureTool({
      name: 'order_cancel',
      title: 'Cancel an order',
      description: "Cancels one of the customer's open orders.",
      input: { orderNumber: z.string().regex(/^\d+$/), customerId: z.string().min(1) },
      annotations: reversibleWrite('Cancel an order'),
      meta: { category: 'account', ...customerScope },
      run: ({ orderNumber, customerId }) => {
        const order = ownOrder(orderNumber, customerId);
        if (!order) return failure(`Order ${orderNumber} was not found.`);
        order.status = 'cancelled';
        return text(`Order ${orderNumber} is cancelled.`);
      },
    }),
    fixtureTool({
      name: 'invoice_create_payment_link',
      title: 'Create a payment link',
      description: 'Creates a link the customer can pay one of their open invoices with.',
      input: { number: z.string().regex(/^\d+$/).meta({ title: 'Invoice' }), customerId: z.string().min(1) },
      annotations: reversibleWrite('Create a payment link'),
      meta: customerScope,
      run: ({ number, customerId }) => {
        const invoice = invoices.find((candidate) => candidate.number === number && candidate.customer === customerName(customerId));
        if (!invoice) return failure(`Invoice ${number} was not found.`);
        if (invoice.status === 'paid') return failure(`Invoice ${number} is already paid.`);
        const url = `https://pay.example.test/${number}/${state.paymentLinks.length + 1}`;
        state.paymentLinks.push({ number, url });
        return text(`Payment link for invoice ${number}: ${url}`);
      },
    }),
    fixtureTool({
      name: 'refund_create',
      title: 'Refund an invoice',
      description: "Refunds part or all of one of the customer's paid invoices.",
      input: { number: z.string().regex(/^\d+$/).meta({ title: 'Invoice' }), amount: z.string().regex(/^\d+(\.\d{2})?$/), customerId: z.string().min(1) },
      annotations: { readOnlyHint: false, destructiveHint: true, title: 'Refund an invoice' },
      meta: { category: 'invoice', ...customerScope },
      run: ({ number, amount, customerId }) => {
        const invoice = invoices.find((candidate) => candidate.number === number && candidate.customer === customerName(customerId));
        if (!invoice) return failure(`Invoice ${number} was not found.`);
        state.refunds.push({ number, amount });
        return text(`Refunded ${amount} EUR on invoice ${number}.`);
      },
    }),
  ];
}

/** Names of the write tools above: a call carrying an idempotency key already seen answers as the first did. */
const ACTION_TOOL_NAMES = new Set(['order_reschedule_delivery', 'order_set_delivery_slot', 'order_cancel', 'invoice_create_payment_link', 'refund_create']);

function businessTools(extraReadTools: number, state: BusinessState): FixtureTool[] {
  const tools: FixtureTool[] = [
    fixtureTool({
      name: 'invoice_get',
      description: "Gets one of the customer's invoices by its number: customer, amount, status and due date.",
      input: { number: z.string().regex(/^\d+$/).describe('Invoice number, e.g. 1042'), customerId: z.string().min(1) },
      annotations: readOnly,
      meta: customerScope,
      run: ({ number, customerId }) => {
        const invoice = invoices.find((candidate) => candidate.number === number && candidate.customer === customerName(customerId));
        if (!invoice) return failure(`Invoice ${number} was not found.`);
        return { content: [{ type: 'text', text: JSON.stringify(invoice) }], structuredContent: { ...invoice } };
      },
    }),
    fixtureTool({
      name: 'invoice_list',
      description: "Lists the customer's invoices.",
      input: { customerId: z.string().min(1) },
      annotations: readOnly,
      meta: customerScope,
      run: ({ customerId }) => {
        const matching = invoices.filter((invoice) => invoice.customer === customerName(customerId));
        if (matching.length === 0) return text(`No invoices for ${customerId}.`);
        return text(
          matching.map((invoice) => `Invoice ${invoice.number}: ${invoice.amount} ${invoice.currency}, ${invoice.status}, due ${invoice.dueDate}`).join('\n'),
        );
      },
    }),
    fixtureTool({
      name: 'plan_get_pricing',
      description: 'Gets the price of every plan.',
      input: {},
      annotations: readOnly,
      run: () => text(plans.map((plan) => `${plan.name}: ${plan.monthlyPrice} EUR/month, up to ${plan.seats} seats`).join('\n')),
    }),
    fixtureTool({
      name: 'help_search_articles',
      description: 'Searches the help centre; returns article titles and snippets.',
      input: { query: z.string().min(1) },
      annotations: readOnly,
      run: ({ query }) => {
        const words = query.toLowerCase().split(/\s+/).filter(Boolean);
        const found = articles.filter((article) => words.some((word) => `${article.title} ${article.snippet}`.toLowerCase().includes(word)));
        if (found.length === 0) return text(`No articles match "${query}".`);
        return text(found.map((article) => `${article.title}\n${article.snippet}`).join('\n\n'));
      },
    }),
    fixtureTool({
      name: 'account_get_status',
      description: "Gets the selected account's status, plan and seats in use.",
      input: { accountId: z.string().min(1) },
      annotations: readOnly,
      meta: { category: 'account', scopeArguments: { accountId: 'entity' } },
      run: ({ accountId }) => {
        const account = accounts.get(accountId);
        return account ? text(JSON.stringify(account)) : failure(`Account ${accountId} was not found.`);
      },
    }),
    // A customer-data read that declares no scoped argument: it could return anyone's account,
    // so the service must refuse it at listing, whoever asks.
    fixtureTool({
      name: 'account_find_by_company',
      description: "Finds any company's account by the company's name.",
      input: { company: z.string().min(1) },
      annotations: readOnly,
      run: ({ company }) => {
        const found = [...accounts.values()].filter((account) => account.company.toLowerCase() === company.toLowerCase());
        return found.length ? text(JSON.stringify(found)) : failure(`No account for ${company}.`);
      },
    }),
    // Writes: listed by the server, never to be offered or called by the service.
    fixtureTool({
      name: 'invoice_issue_refund',
      description: 'Refunds an invoice, fully or in part.',
      input: { number: z.string(), amount: z.string() },
      annotations: { readOnlyHint: false, destructiveHint: true },
      run: ({ number, amount }) => text(`Refunded ${amount} EUR on invoice ${number}.`),
    }),
    fixtureTool({
      name: 'account_update_email',
      description: "Changes the account's billing email address.",
      input: { accountId: z.string(), email: z.string() },
      annotations: { readOnlyHint: false, destructiveHint: false },
      run: ({ accountId, email }) => text(`Billing email of ${accountId} is now ${email}.`),
    }),
    fixtureTool({
      name: 'plan_change',
      description: 'Moves an account to another plan.',
      input: { accountId: z.string(), plan: z.enum(['Starter', 'Pro', 'Business']) },
      run: ({ accountId, plan }) => text(`Account ${accountId} is now on ${plan}.`),
    }),
  ];
  tools.push(...actionTools(state));
  for (let index = 1; index <= extraReadTools; index += 1) {
    const sku = String(index).padStart(4, '0');
    tools.push(
      fixtureTool({
        name: `catalog_item_${sku}`,
        description: `Gets stock and price of catalogue item ${sku}.`,
        input: {},
        annotations: readOnly,
        run: () => text(`Item ${sku}: ${index % 7} in stock, ${(index % 50) + 5}.00 EUR`),
      }),
    );
  }
  return tools;
}

const ListedMessageSchema = z.looseObject({ method: z.string().optional(), params: z.unknown().optional() });
const CallParamsSchema = z.looseObject({
  name: z.string(),
  arguments: z.record(z.string(), z.unknown()).optional(),
  _meta: z.record(z.string(), z.unknown()).optional(),
});

function toolCallsIn(body: unknown): RecordedToolCall[] {
  const messages = Array.isArray(body) ? body : [body];
  const calls: RecordedToolCall[] = [];
  for (const candidate of messages) {
    const message = ListedMessageSchema.safeParse(candidate);
    if (!message.success || message.data.method !== 'tools/call') continue;
    const params = CallParamsSchema.safeParse(message.data.params);
    if (params.success) calls.push({ name: params.data.name, arguments: params.data.arguments, meta: params.data._meta });
  }
  return calls;
}

async function readJsonBody(request: IncomingMessage): Promise<{ ok: true; body: unknown } | { ok: false }> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  try {
    return { ok: true, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) };
  } catch {
    return { ok: false };
  }
}

function sendJsonError(response: ServerResponse, status: number, message: string): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

interface Session {
  server: McpServer;
  transport: StreamableHTTPServerTransport;
  /** The client's GET stream, where notifications go; a notification sent before it opens is lost. */
  notificationStream: ServerResponse | undefined;
}

/** Parks the next write of `name` in `gates`: `reached` once it arrives, held until `release()`. */
function gate(gates: Map<string, { reached: () => void; released: Promise<void> }>, name: string): { reached: Promise<void>; release(): void } {
  let reached = () => undefined as void;
  let release = () => undefined as void;
  const reachedPromise = new Promise<void>((resolve) => (reached = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  gates.set(name, { reached, released });
  return { reached: reachedPromise, release };
}

async function waitFor(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`test MCP server: condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** `port`: listen on that port (a test that starts the server where a service already looks for it), else any free one. */
export async function startMcpServer(options: { extraReadTools?: number; port?: number } = {}): Promise<McpTestServer> {
  const state = initialState();
  const tools = businessTools(options.extraReadTools ?? 0, state);
  const applied: AppliedWrite[] = [];
  const answered = new Map<string, CallToolResult>();
  const holds = new Map<string, { reached: () => void; released: Promise<void> }>();
  const slows = new Map<string, { reached: () => void; released: Promise<void> }>();
  /** A write: once per idempotency key (a repeated key gets the first answer, no second effect). */
  const runWrite = async (tool: FixtureTool, args: unknown, meta: Record<string, unknown> | undefined): Promise<CallToolResult> => {
    const key = typeof meta?.['wa-assistant/idempotency-key'] === 'string' ? meta['wa-assistant/idempotency-key'] : undefined;
    const seen = key === undefined ? undefined : answered.get(`${tool.name}|${key}`);
    if (seen) return seen;
    const slow = slows.get(tool.name);
    if (slow) {
      slows.delete(tool.name);
      slow.reached();
      await slow.released;
    }
    const result = tool.run(args);
    if (!result.isError) applied.push({ tool: tool.name, arguments: { ...(args as Record<string, unknown>) }, idempotencyKey: key });
    if (key !== undefined) answered.set(`${tool.name}|${key}`, result);
    const hold = holds.get(tool.name);
    if (hold) {
      holds.delete(tool.name);
      hold.reached();
      await hold.released;
    }
    return result;
  };
  const inputJsonSchemas = new Map(tools.map((tool) => [tool.name, z.toJSONSchema(tool.inputSchema, { io: 'input' })]));
  const calls: RecordedToolCall[] = [];
  const sessions = new Map<string, Session>();

  const listing = (): Tool[] =>
    tools.map((tool) =>
      ToolSchema.parse({
        name: tool.name,
        description: tool.description,
        inputSchema: inputJsonSchemas.get(tool.name),
        ...(tool.title ? { title: tool.title } : {}),
        ...(tool.annotations ? { annotations: tool.annotations } : {}),
        ...(tool.meta ? { _meta: tool.meta } : {}),
      }),
    );

  function createSessionServer(): McpServer {
    const server = new McpServer({ name: 'harbour-lane-business-data', version: '1.0.0' });
    for (const tool of tools) {
      server.registerTool(
        tool.name,
        {
          description: tool.description,
          inputSchema: tool.inputSchema,
          ...(tool.annotations ? { annotations: tool.annotations } : {}),
          ...(tool.meta ? { _meta: tool.meta } : {}),
        },
        (args: unknown, extra: { _meta?: Record<string, unknown> }) => (ACTION_TOOL_NAMES.has(tool.name) ? runWrite(tool, args, extra._meta) : tool.run(args)),
      );
    }
    // Replaces McpServer's one-page listing with a paged one, so clients must follow nextCursor.
    server.server.setRequestHandler(ListToolsRequestSchema, (request) => {
      const all = listing();
      const cursor = request.params?.cursor;
      const start = cursor === undefined ? 0 : Number(cursor);
      if (!Number.isInteger(start) || start < 0 || start > all.length) throw new McpError(ErrorCode.InvalidParams, `Invalid cursor ${cursor}`);
      const end = start + TOOLS_PAGE_SIZE;
      return { tools: all.slice(start, end), ...(end < all.length ? { nextCursor: String(end) } : {}) };
    });
    return server;
  }

  async function openSession(): Promise<Session> {
    const server = createSessionServer();
    const session: Session = {
      server,
      notificationStream: undefined,
      transport: new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (sessionId) => {
          sessions.set(sessionId, session);
        },
      }),
    };
    session.transport.onclose = () => {
      if (session.transport.sessionId) sessions.delete(session.transport.sessionId);
    };
    await server.connect(session.transport);
    return session;
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const sessionHeader = request.headers['mcp-session-id'];
    const sessionId = typeof sessionHeader === 'string' ? sessionHeader : undefined;
    const existing = sessionId === undefined ? undefined : sessions.get(sessionId);
    if (request.method === 'POST') {
      const parsed = await readJsonBody(request);
      if (!parsed.ok) return sendJsonError(response, 400, 'Parse error: body is not JSON');
      calls.push(...toolCallsIn(parsed.body));
      if (existing) return existing.transport.handleRequest(request, response, parsed.body);
      if (sessionId !== undefined) return sendJsonError(response, 404, 'Session not found');
      if (!isInitializeRequest(parsed.body)) return sendJsonError(response, 400, 'No session: initialize first');
      const session = await openSession();
      return session.transport.handleRequest(request, response, parsed.body);
    }
    if (!existing) return sendJsonError(response, sessionId === undefined ? 400 : 404, 'Session not found');
    if (request.method === 'GET') existing.notificationStream = response;
    return existing.transport.handleRequest(request, response);
  }

  const httpServer = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) sendJsonError(response, 500, error instanceof Error ? error.message : String(error));
      else response.end();
    });
  });
  await new Promise<void>((resolve) => httpServer.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = httpServer.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/mcp`,
    calls,
    applied,
    orders: () => [...state.orders.values()].map((order) => ({ ...order })),
    paymentLinks: () => [...state.paymentLinks],
    refunds: () => [...state.refunds],
    holdNextWrite: (name) => gate(holds, name),
    slowNextWrite: (name) => gate(slows, name),
    async changeAnnotations(name, annotations) {
      const tool = tools.find((candidate) => candidate.name === name);
      if (!tool) throw new Error(`test MCP server has no tool ${name}`);
      tool.annotations = annotations;
      for (const session of sessions.values()) {
        await waitFor(() => session.notificationStream?.headersSent === true && !session.notificationStream.writableEnded);
        session.server.sendToolListChanged();
      }
    },
    async close() {
      for (const session of [...sessions.values()]) await session.server.close();
      sessions.clear();
      httpServer.closeAllConnections();
      await new Promise<void>((resolve, reject) => httpServer.close((error) => (error ? reject(error) : resolve())));
    },
  };
}
