/**
 * A stand-in for a provider's embeddings endpoint (OpenAI's `POST /v1/embeddings`) on loopback:
 * deterministic vectors, a bag of words by random projection — each word (lower case, a trailing
 * "s" off) adds its own pseudo-random ±1 vector, seeded by the word, so texts sharing words lie
 * close. `synonyms` lets a test give words one shared vector (a stand-in for a model's sense of
 * meaning: "parcel" near "delivery"). It honours `dimensions`, counts requests and inputs, and
 * can be told to fail. Never a real host.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface EmbeddingStub {
  /** The base URL to give as OPENAI_BASE_URL (`http://127.0.0.1:<port>/v1`). */
  baseUrl: string;
  /** Requests answered (or failed) so far, and the inputs each held. */
  requests: { model: string; inputs: string[]; dimensions: number | undefined }[];
  /** The next `count` requests answer 500. */
  failNext(count?: number): void;
  close(): Promise<void>;
}

const DEFAULT_DIMENSIONS = 1536;

function hash(text: string): number {
  let value = 2166136261;
  for (let at = 0; at < text.length; at += 1) value = Math.imul(value ^ text.charCodeAt(at), 16777619);
  return value >>> 0;
}

/** The deterministic vector of a text (exported so tests can reason about similarity). */
export function stubEmbedding(text: string, dimensions: number, synonyms: readonly (readonly string[])[] = []): number[] {
  const canonical = new Map<string, string>();
  for (const group of synonyms) for (const word of group) canonical.set(word.toLowerCase(), group[0]!.toLowerCase());
  const vector = new Array<number>(dimensions).fill(0);
  const words = text.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) ?? [];
  for (const raw of words) {
    const word = canonical.get(raw) ?? canonical.get(raw.replace(/s$/, '')) ?? raw.replace(/s$/, '');
    let state = hash(word) || 1;
    for (let at = 0; at < dimensions; at += 1) {
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      vector[at]! += (state & 1) === 1 ? 1 : -1;
    }
  }
  const norm = Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0)) || 1;
  return vector.map((value) => value / norm);
}

async function body(request: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of request) parts.push(part as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

export async function startEmbeddingStub(options: { synonyms?: readonly (readonly string[])[] } = {}): Promise<EmbeddingStub> {
  const requests: EmbeddingStub['requests'] = [];
  let failures = 0;
  const server = createServer((request, response) => {
    void (async () => {
      if (request.method !== 'POST' || !/\/embeddings$/.test(request.url ?? '')) return void response.writeHead(404).end();
      const parsed = JSON.parse(await body(request)) as { model: string; input: string | string[]; dimensions?: number };
      const inputs = typeof parsed.input === 'string' ? [parsed.input] : parsed.input;
      requests.push({ model: parsed.model, inputs, dimensions: parsed.dimensions });
      if (failures > 0) {
        failures -= 1;
        return void response
          .writeHead(500, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: 'stub failure', type: 'server_error' } }));
      }
      const dimensions = parsed.dimensions ?? DEFAULT_DIMENSIONS;
      const data = inputs.map((input, index) => ({ object: 'embedding', index, embedding: stubEmbedding(input, dimensions, options.synonyms) }));
      const tokens = inputs.reduce((sum, input) => sum + Math.ceil(input.length / 4), 0);
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ object: 'list', data, model: parsed.model, usage: { prompt_tokens: tokens, total_tokens: tokens } }));
    })().catch(() => response.writeHead(400).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    failNext(count = 1) {
      failures = count;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The knowledge feature's `model` option for MODEL_EMBEDDING=openai:text-embedding-3-small served by the stub. */
export function stubEmbeddingModels(stub: EmbeddingStub, dimensions = 512) {
  return {
    providers: { openai: { apiKey: 'stub-key', baseUrl: stub.baseUrl }, compatible: {} },
    fast: [],
    smart: [],
    vision: [],
    embedding: { provider: 'openai', modelId: 'text-embedding-3-small', dimensions },
  };
}
