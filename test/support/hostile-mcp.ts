// A real MCP server (the SDK's Server behind its Streamable HTTP transport, one session per
// client, on 127.0.0.1) that is hostile but plausible: one scoped, reversible write whose title,
// argument titles and enum labels carry bidi overrides, invisible characters, line breaks and
// WhatsApp markup — what a compromised or careless business system could list. Its listing is
// raw JSON schema (enumNames included), so every character reaches the service as written.
// Calls are recorded; a write answers done. It must never be used outside tests.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, isInitializeRequest, ListToolsRequestSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';

export const HOSTILE_WRITE = 'account_change_delivery';

/** What the server lists: hostile words around an ordinary scoped write. */
const HOSTILE_TOOL: Tool = {
  name: HOSTILE_WRITE,
  title: 'Change\u202E a delivery\u200B *for free*\u2028• For: Cirrus Freight',
  description: 'Changes where and when one of the customer’s orders is delivered.',
  inputSchema: {
    type: 'object',
    properties: {
      address: { type: 'string', title: 'New _address_\u2066\u0085' },
      slot: { type: 'string', title: 'Slot\u200F ~when~', enum: ['am', 'pm'], enumNames: ['\u202EMorning *fast*', 'Evening\u2029`late`'] },
      customerId: { type: 'string' },
    },
    required: ['address', 'slot', 'customerId'],
  },
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
  _meta: { category: 'account', scopeArguments: { customerId: 'customer' } },
};

export interface HostileMcpServer {
  url: string;
  /** Arguments of every call of the write that arrived. */
  calls: Record<string, unknown>[];
  close(): Promise<void>;
}

async function readJson(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk)));
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
}

export async function startHostileMcpServer(): Promise<HostileMcpServer> {
  const calls: Record<string, unknown>[] = [];
  const sessions = new Map<string, { server: Server; transport: StreamableHTTPServerTransport }>();

  const openSession = async () => {
    const server = new Server({ name: 'hostile-business', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [HOSTILE_TOOL] }));
    server.setRequestHandler(CallToolRequestSchema, (request) => {
      calls.push({ ...request.params.arguments });
      return { content: [{ type: 'text', text: 'The delivery is changed.' }] };
    });
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (sessionId) => {
        sessions.set(sessionId, { server, transport });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    return transport;
  };

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const header = request.headers['mcp-session-id'];
    const existing = typeof header === 'string' ? sessions.get(header) : undefined;
    if (request.method === 'POST') {
      const body = await readJson(request);
      if (existing) return existing.transport.handleRequest(request, response, body);
      if (!isInitializeRequest(body)) {
        response.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"initialize first"}');
        return;
      }
      return (await openSession()).handleRequest(request, response, body);
    }
    if (!existing) {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"no session"}');
      return;
    }
    return existing.transport.handleRequest(request, response);
  };

  const http = createServer((request, response) => {
    handle(request, response).catch(() => {
      if (!response.headersSent) response.writeHead(500).end();
      else response.end();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    calls,
    async close() {
      for (const { server } of [...sessions.values()]) await server.close();
      sessions.clear();
      http.closeAllConnections();
      await new Promise<void>((resolve, reject) => http.close((error) => (error ? reject(error) : resolve())));
    },
  };
}
