// A local Anthropic-Messages-shaped server the tests point the real @ai-sdk/anthropic provider
// at (ANTHROPIC_BASE_URL): POST /v1/messages, plain JSON or SSE streaming, text and structured
// output (native `output_config.format`, or the provider's forced `json` tool), errors, hangs
// and malformed bodies, each chosen per request by a handler; every request is recorded.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface AnthropicContentBlock {
  type: string;
  text?: string;
  source?: { type: string; media_type?: string; data?: string };
  [key: string]: unknown;
}

export interface AnthropicRequestBody {
  model: string;
  system?: string | AnthropicContentBlock[];
  messages: { role: 'user' | 'assistant'; content: string | AnthropicContentBlock[] }[];
  max_tokens: number;
  stream?: boolean;
  tools?: { name: string; input_schema?: Record<string, unknown> }[];
  output_config?: { format?: { type: string; schema?: Record<string, unknown> } };
  [key: string]: unknown;
}

export interface AnthropicRecordedRequest {
  path: string;
  headers: IncomingHttpHeaders;
  body: AnthropicRequestBody;
}

export type AnthropicStubReply =
  | { text: string; delayMs?: number }
  /** Structured output: sent the way the request asked for it (native format, or the `json` tool). */
  | { json: unknown; delayMs?: number }
  | { status: number; message?: string }
  /** A response that never starts (the client's deadline must end it). */
  | { hang: true }
  | { raw: string; status?: number; contentType?: string };

export type AnthropicStubHandler = (body: AnthropicRequestBody) => AnthropicStubReply;

export interface AnthropicStub {
  /** http://127.0.0.1:<port>/v1 — ANTHROPIC_BASE_URL. */
  baseUrl: string;
  requests: AnthropicRecordedRequest[];
  respondWith(handler: AnthropicStubHandler | AnthropicStubReply): void;
  reset(): void;
  close(): Promise<void>;
}

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'request-id': `req_${randomBytes(8).toString('hex')}`,
  });
  response.end(text);
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const tokens = (text: string) => Math.max(1, Math.ceil(text.length / 4));

function contentFor(body: AnthropicRequestBody, reply: Extract<AnthropicStubReply, { text: string } | { json: unknown }>): AnthropicContentBlock[] {
  if ('text' in reply) return [{ type: 'text', text: reply.text }];
  if (body.output_config?.format || !body.tools?.some((tool) => tool.name === 'json')) return [{ type: 'text', text: JSON.stringify(reply.json) }];
  return [{ type: 'tool_use', id: `toolu_${randomBytes(8).toString('hex')}`, name: 'json', input: reply.json }];
}

function sendMessage(response: ServerResponse, body: AnthropicRequestBody, content: AnthropicContentBlock[]): void {
  const usesTool = content.some((block) => block.type === 'tool_use');
  sendJson(response, 200, {
    id: `msg_${randomBytes(8).toString('hex')}`,
    type: 'message',
    role: 'assistant',
    model: body.model,
    content,
    stop_reason: usesTool ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: tokens(JSON.stringify(body.messages)), output_tokens: tokens(JSON.stringify(content)) },
  });
}

function streamMessage(response: ServerResponse, body: AnthropicRequestBody, content: AnthropicContentBlock[]): void {
  response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  const event = (type: string, data: Record<string, unknown>) => response.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  const input = tokens(JSON.stringify(body.messages));
  event('message_start', {
    message: {
      id: `msg_${randomBytes(8).toString('hex')}`,
      type: 'message',
      role: 'assistant',
      model: body.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: input, output_tokens: 1 },
    },
  });
  content.forEach((block, index) => {
    if (block.type === 'text') {
      event('content_block_start', { index, content_block: { type: 'text', text: '' } });
      for (const piece of (block.text ?? '').match(/\s*\S+\s*/g) ?? []) event('content_block_delta', { index, delta: { type: 'text_delta', text: piece } });
    } else {
      event('content_block_start', { index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } });
      event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) } });
    }
    event('content_block_stop', { index });
  });
  const usesTool = content.some((block) => block.type === 'tool_use');
  event('message_delta', {
    delta: { stop_reason: usesTool ? 'tool_use' : 'end_turn', stop_sequence: null },
    usage: { output_tokens: tokens(JSON.stringify(content)) },
  });
  event('message_stop', {});
  response.end();
}

export async function startAnthropicStub(): Promise<AnthropicStub> {
  const requests: AnthropicRecordedRequest[] = [];
  const defaultHandler: AnthropicStubHandler = () => ({ text: 'This is the Anthropic stub answering.' });
  let handler = defaultHandler;
  const hanging = new Set<ServerResponse>();

  async function serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = new URL(request.url ?? '/', 'http://anthropic-stub.invalid').pathname;
    const text = await readBody(request);
    if (typeof request.headers['x-api-key'] !== 'string') {
      sendJson(response, 401, { type: 'error', error: { type: 'authentication_error', message: 'x-api-key header is required' } });
      return;
    }
    if (request.method !== 'POST' || path !== '/v1/messages') {
      sendJson(response, 404, { type: 'error', error: { type: 'not_found_error', message: `Not found: ${path}` } });
      return;
    }
    const body = JSON.parse(text) as AnthropicRequestBody;
    requests.push({ path, headers: request.headers, body });
    const reply = handler(body);
    if ('hang' in reply) {
      hanging.add(response);
      response.once('close', () => hanging.delete(response));
      return;
    }
    if ('raw' in reply) {
      response.writeHead(reply.status ?? 200, { 'content-type': reply.contentType ?? 'application/json' });
      response.end(reply.raw);
      return;
    }
    if ('status' in reply) {
      sendJson(response, reply.status, {
        type: 'error',
        error: { type: ERROR_TYPES[reply.status] ?? 'api_error', message: reply.message ?? `HTTP ${reply.status}` },
      });
      return;
    }
    if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
    const content = contentFor(body, reply);
    if (body.stream === true) streamMessage(response, body, content);
    else sendMessage(response, body, content);
  }

  const server = createServer((request, response) => {
    serve(request, response).catch((error: unknown) => {
      if (response.headersSent) response.destroy();
      else sendJson(response, 500, { type: 'error', error: { type: 'api_error', message: `anthropic stub failed: ${String(error)}` } });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    respondWith(next) {
      handler = typeof next === 'function' ? next : () => next;
    },
    reset() {
      requests.length = 0;
      handler = defaultHandler;
    },
    close() {
      return new Promise((resolve, reject) => {
        for (const response of hanging) response.destroy();
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      });
    },
  };
}
