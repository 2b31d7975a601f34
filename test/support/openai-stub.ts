// Owns the local OpenAI-compatible Chat Completions server the tests point the real
// @ai-sdk/openai provider at: POST /v1/chat/completions, plain JSON or SSE streaming, text,
// tool calls, structured output (response_format json_schema), errors and malformed bodies,
// each chosen per request by a handler; every request is recorded. It also answers
// POST /v1/audio/transcriptions (multipart, as the OpenAI transcription API) for voice notes.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ChatCompletionContentPart {
  type: string;
  text?: string;
  [key: string]: unknown;
}

export interface ChatCompletionToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatCompletionMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content?: string | ChatCompletionContentPart[] | null;
  tool_calls?: ChatCompletionToolCall[];
  tool_call_id?: string;
  name?: string;
}

export interface ChatCompletionTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean };
}

export interface ChatCompletionRequestBody {
  model: string;
  messages: ChatCompletionMessage[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  tools?: ChatCompletionTool[];
  tool_choice?: unknown;
  response_format?: {
    type: 'text' | 'json_object' | 'json_schema';
    json_schema?: { name: string; schema: Record<string, unknown>; strict?: boolean; description?: string };
  };
  max_tokens?: number;
  max_completion_tokens?: number;
  temperature?: number;
  [key: string]: unknown;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: ChatCompletionRequestBody;
  receivedAt: number;
}

export interface StubUsage {
  promptTokens?: number;
  completionTokens?: number;
}

export interface StubToolCall {
  name: string;
  /** An object is JSON-encoded; a string is sent as is (so it may be broken JSON on purpose). */
  arguments: string | Record<string, unknown>;
  id?: string;
}

interface StubTiming {
  /** Wait before the response starts. */
  delayMs?: number;
  /** Wait between streamed chunks. */
  chunkDelayMs?: number;
}

export type StubReply =
  | ({ text: string; finishReason?: 'stop' | 'length' | 'content_filter'; usage?: StubUsage } & StubTiming)
  | ({ json: unknown; usage?: StubUsage } & StubTiming)
  | ({ toolCalls: StubToolCall[]; text?: string; usage?: StubUsage } & StubTiming)
  | { status: number; body?: unknown; headers?: Record<string, string> }
  | { raw: string; status?: number; contentType?: string };

export type StubHandler = (body: ChatCompletionRequestBody, request: RecordedRequest) => StubReply | Promise<StubReply>;

/** One transcription request: the model and the audio file the service uploaded. */
export interface RecordedTranscription {
  model: string;
  audio: Buffer;
  mediaType: string;
  filename: string;
}

/** How a transcription request is answered: the text, or an error status. */
export type TranscriptionReply = { text: string; delayMs?: number } | { status: number };

export interface OpenAIStub {
  /** http://127.0.0.1:<port>/v1 — give it to createOpenAI({ baseURL }). */
  baseUrl: string;
  requests: RecordedRequest[];
  transcriptions: RecordedTranscription[];
  /** How `/audio/transcriptions` answers from now on (default: a fixed sentence). */
  transcribeWith(reply: TranscriptionReply | ((request: RecordedTranscription) => TranscriptionReply)): void;
  /** Sets the handler (or fixed reply) for every request not served by a queued respondOnce reply. */
  respondWith(handler: StubHandler | StubReply): void;
  /** Queues replies served one each, in order, before the respondWith handler. */
  respondOnce(...replies: Array<StubHandler | StubReply>): void;
  /** Forgets recorded requests and queued replies and restores the default handler. */
  reset(): void;
  close(): Promise<void>;
}

export const defaultStubAnswer = 'This is the stub model answering.';

const defaultHandler: StubHandler = () => ({ text: defaultStubAnswer });

function sleep(milliseconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, milliseconds));
}

function newCompletionId(): string {
  return `chatcmpl-${randomBytes(15).toString('base64url')}`;
}

function newToolCallId(): string {
  return `call_${randomBytes(12).toString('base64url')}`;
}

/** Roughly four characters a token, like the usual rule of thumb. */
function estimateTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

function openAIErrorBody(status: number, message?: string): { error: { message: string; type: string; param: null; code: string | null } } {
  const byStatus: Record<number, { type: string; code: string | null; message: string }> = {
    400: { type: 'invalid_request_error', code: null, message: 'Invalid request.' },
    401: { type: 'invalid_request_error', code: 'invalid_api_key', message: 'Incorrect API key provided.' },
    404: { type: 'invalid_request_error', code: null, message: 'Not found.' },
    429: { type: 'requests', code: 'rate_limit_exceeded', message: 'Rate limit reached for requests.' },
    500: { type: 'server_error', code: null, message: 'The server had an error while processing your request.' },
    503: { type: 'server_error', code: null, message: 'The engine is currently overloaded, please try again later.' },
  };
  const known = byStatus[status] ?? { type: 'server_error', code: null, message: `HTTP ${status}` };
  return { error: { message: message ?? known.message, type: known.type, param: null, code: known.code } };
}

function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'x-request-id': `req_${randomBytes(16).toString('hex')}`,
    ...headers,
  });
  response.end(text);
}

/** Splits text into word-sized pieces (each keeps its trailing whitespace), like token deltas. */
function splitIntoDeltas(text: string): string[] {
  return text.match(/\s*\S+\s*/g) ?? (text === '' ? [] : [text]);
}

function splitArguments(argumentsText: string): string[] {
  if (argumentsText.length < 4) return [argumentsText];
  const third = Math.ceil(argumentsText.length / 3);
  return [argumentsText.slice(0, third), argumentsText.slice(third, 2 * third), argumentsText.slice(2 * third)].filter((piece) => piece !== '');
}

interface CompletionPlan {
  text: string | null;
  toolCalls: ChatCompletionToolCall[];
  finishReason: string;
  usage: {
    prompt_tokens: number;
    completion_tokens: number;
    total_tokens: number;
    prompt_tokens_details: { cached_tokens: number; audio_tokens: number };
    completion_tokens_details: { reasoning_tokens: number; audio_tokens: number; accepted_prediction_tokens: number; rejected_prediction_tokens: number };
  };
  delayMs: number;
  chunkDelayMs: number;
}

function planCompletion(
  body: ChatCompletionRequestBody,
  reply: Extract<StubReply, { text: string } | { json: unknown } | { toolCalls: StubToolCall[] }>,
): CompletionPlan {
  let text: string | null;
  let toolCalls: ChatCompletionToolCall[] = [];
  let finishReason = 'stop';
  if ('toolCalls' in reply) {
    text = reply.text ?? null;
    toolCalls = reply.toolCalls.map((call) => ({
      id: call.id ?? newToolCallId(),
      type: 'function',
      function: { name: call.name, arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments) },
    }));
    finishReason = 'tool_calls';
  } else if ('json' in reply) {
    text = JSON.stringify(reply.json);
  } else {
    text = reply.text;
    finishReason = reply.finishReason ?? 'stop';
  }
  const completionText = (text ?? '') + toolCalls.map((call) => call.function.name + call.function.arguments).join('');
  const promptTokens = reply.usage?.promptTokens ?? estimateTokens(JSON.stringify(body.messages));
  const completionTokens = reply.usage?.completionTokens ?? estimateTokens(completionText);
  return {
    text,
    toolCalls,
    finishReason,
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    },
    delayMs: reply.delayMs ?? 0,
    chunkDelayMs: reply.chunkDelayMs ?? 0,
  };
}

function completionEnvelope(model: string, id: string, created: number): { id: string; created: number; model: string; system_fingerprint: string } {
  return { id, created, model, system_fingerprint: 'fp_stub' };
}

function sendCompletion(response: ServerResponse, body: ChatCompletionRequestBody, plan: CompletionPlan): void {
  const envelope = completionEnvelope(body.model, newCompletionId(), Math.floor(Date.now() / 1000));
  sendJson(response, 200, {
    ...envelope,
    object: 'chat.completion',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: plan.text,
          refusal: null,
          ...(plan.toolCalls.length > 0 ? { tool_calls: plan.toolCalls } : {}),
          annotations: [],
        },
        logprobs: null,
        finish_reason: plan.finishReason,
      },
    ],
    usage: plan.usage,
    service_tier: 'default',
  });
}

async function streamCompletion(response: ServerResponse, body: ChatCompletionRequestBody, plan: CompletionPlan): Promise<void> {
  const includeUsage = body.stream_options?.include_usage === true;
  const envelope = completionEnvelope(body.model, newCompletionId(), Math.floor(Date.now() / 1000));
  let clientGone = false;
  response.once('close', () => {
    clientGone = !response.writableFinished;
  });
  response.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-request-id': `req_${randomBytes(16).toString('hex')}`,
  });
  const write = async (payload: string, pause: boolean): Promise<boolean> => {
    if (clientGone) return false;
    response.write(`data: ${payload}\n\n`);
    if (pause && plan.chunkDelayMs > 0) await sleep(plan.chunkDelayMs);
    return !clientGone;
  };
  const chunk = (choices: unknown[], usage: unknown = null): string =>
    JSON.stringify({ ...envelope, object: 'chat.completion.chunk', service_tier: 'default', choices, ...(includeUsage ? { usage } : {}) });
  const delta = (content: Record<string, unknown>, finishReason: string | null = null): string =>
    chunk([{ index: 0, delta: content, logprobs: null, finish_reason: finishReason }]);

  const pieces: string[] = [delta({ role: 'assistant', content: '', refusal: null })];
  for (const text of splitIntoDeltas(plan.text ?? '')) pieces.push(delta({ content: text }));
  plan.toolCalls.forEach((call, index) => {
    pieces.push(delta({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.function.name, arguments: '' } }] }));
    for (const fragment of splitArguments(call.function.arguments)) {
      pieces.push(delta({ tool_calls: [{ index, function: { arguments: fragment } }] }));
    }
  });
  pieces.push(delta({}, plan.finishReason));
  if (includeUsage) pieces.push(chunk([], plan.usage));
  pieces.push('[DONE]');
  for (const [index, piece] of pieces.entries()) {
    if (!(await write(piece, index < pieces.length - 1))) return;
  }
  response.end();
}

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const defaultStubTranscription = 'This is the stub transcription.';

export async function startOpenAIStub(): Promise<OpenAIStub> {
  const requests: RecordedRequest[] = [];
  let handler: StubHandler = defaultHandler;
  let queued: StubHandler[] = [];
  const asHandler = (reply: StubHandler | StubReply): StubHandler => (typeof reply === 'function' ? reply : () => reply);
  const transcriptions: RecordedTranscription[] = [];
  let transcription: (request: RecordedTranscription) => TranscriptionReply = () => ({ text: defaultStubTranscription });

  /** The OpenAI transcription API: a multipart form with `model` and `file`; answers `{ text }`. */
  async function serveTranscription(request: IncomingMessage, response: ServerResponse, raw: Buffer): Promise<void> {
    const form = await new Request('http://openai-stub.invalid/', {
      method: 'POST',
      headers: { 'content-type': request.headers['content-type'] ?? '' },
      body: new Uint8Array(raw),
    })
      .formData()
      .catch(() => undefined);
    const file = form?.get('file');
    const model = form?.get('model');
    if (!(file instanceof File) || typeof model !== 'string') {
      sendJson(response, 400, openAIErrorBody(400, "Missing required parameter: 'file' or 'model'."));
      return;
    }
    const recorded: RecordedTranscription = { model, audio: Buffer.from(await file.arrayBuffer()), mediaType: file.type, filename: file.name };
    transcriptions.push(recorded);
    const reply = transcription(recorded);
    if ('status' in reply) {
      sendJson(response, reply.status, openAIErrorBody(reply.status));
      return;
    }
    if (reply.delayMs) await sleep(reply.delayMs);
    sendJson(response, 200, { text: reply.text, usage: { type: 'duration', seconds: 3 } });
  }

  async function serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const receivedAt = Date.now();
    const path = new URL(request.url ?? '/', 'http://openai-stub.invalid').pathname;
    const raw = await readBody(request);
    const text = raw.toString('utf8');
    const authorization = request.headers.authorization;
    if (authorization === undefined || !/^Bearer \S+/.test(authorization)) {
      sendJson(response, 401, openAIErrorBody(401, "You didn't provide an API key."));
      return;
    }
    if (request.method === 'GET' && path === '/v1/models') {
      sendJson(response, 200, { object: 'list', data: [{ id: 'gpt-x', object: 'model', created: 0, owned_by: 'openai-stub' }] });
      return;
    }
    if (request.method === 'POST' && path === '/v1/audio/transcriptions') {
      await serveTranscription(request, response, raw);
      return;
    }
    if (request.method !== 'POST' || path !== '/v1/chat/completions') {
      sendJson(response, 404, openAIErrorBody(404, `Unknown request URL: ${request.method} ${path}.`));
      return;
    }
    let body: ChatCompletionRequestBody;
    try {
      body = JSON.parse(text) as ChatCompletionRequestBody;
    } catch {
      sendJson(response, 400, openAIErrorBody(400, 'We could not parse the JSON body of your request.'));
      return;
    }
    if (typeof body.model !== 'string' || !Array.isArray(body.messages)) {
      sendJson(response, 400, openAIErrorBody(400, "Missing required parameter: 'model' or 'messages'."));
      return;
    }
    const recorded: RecordedRequest = { method: request.method ?? 'POST', path, headers: request.headers, body, receivedAt };
    requests.push(recorded);
    const current = queued.shift() ?? handler;
    const reply = await current(body, recorded);
    if ('raw' in reply) {
      const contentType = reply.contentType ?? (body.stream === true ? 'text/event-stream' : 'application/json');
      response.writeHead(reply.status ?? 200, { 'content-type': contentType, 'content-length': Buffer.byteLength(reply.raw) });
      response.end(reply.raw);
      return;
    }
    if ('status' in reply) {
      sendJson(response, reply.status, reply.body ?? openAIErrorBody(reply.status), reply.headers);
      return;
    }
    const plan = planCompletion(body, reply);
    if (plan.delayMs > 0) await sleep(plan.delayMs);
    if (body.stream === true) await streamCompletion(response, body, plan);
    else sendCompletion(response, body, plan);
  }

  const server = createServer((request, response) => {
    serve(request, response).catch((error: unknown) => {
      if (response.headersSent) {
        response.destroy();
        return;
      }
      sendJson(response, 500, openAIErrorBody(500, `openai stub handler failed: ${error instanceof Error ? error.message : String(error)}`));
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
    transcriptions,
    transcribeWith(next) {
      transcription = typeof next === 'function' ? next : () => next;
    },
    respondWith(next) {
      handler = asHandler(next);
    },
    respondOnce(...replies) {
      queued.push(...replies.map(asHandler));
    },
    reset() {
      requests.length = 0;
      transcriptions.length = 0;
      transcription = () => ({ text: defaultStubTranscription });
      queued = [];
      handler = defaultHandler;
    },
    close() {
      return new Promise((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      });
    },
  };
}
