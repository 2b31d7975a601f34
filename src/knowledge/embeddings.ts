/**
 * Embeddings for the knowledge (MODEL_EMBEDDING): chunks are embedded when they are added
 * (batched, `embedMany`), stored with the chunk in MongoDB as float32 bytes (a BSON binary: 2 KB
 * a chunk at 512 dimensions), and a turn's query is embedded once at search time (`embed`, no
 * retry, a short deadline: a failure leaves that search lexical). Not a model call of the turn's
 * ≤ 3: one embedding request.
 */
import { embed, embedMany, type EmbeddingModel } from 'ai';
import { MODEL_TELEMETRY } from '../model/provider.js';
import type { ChunkRecord } from './model.js';

/** Chunks per embedding request (providers take up to a few thousand inputs; this keeps requests small). */
const BATCH = 64;
const INGEST_DEADLINE_MS = 60_000;
const QUERY_DEADLINE_MS = 3_000;

export interface Embedder {
  /** `provider:model`, stored with each vector it made. */
  label: string;
  embedChunks(chunks: readonly ChunkRecord[]): Promise<ChunkRecord[]>;
  /** The query's vector; undefined when the provider failed or took too long (the search is then lexical). */
  embedQuery(text: string): Promise<Float32Array | undefined>;
}

/** Runs `call` with a signal aborted after `ms`; the timer ends with the call (no per-call timer left behind). */
async function withDeadline<T>(ms: number, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException(`no embedding within ${ms} ms`, 'TimeoutError')), ms);
  try {
    return await call(controller.signal);
  } finally {
    clearTimeout(timer);
  }
}

/** What is embedded of a chunk: where it sits and what it says. */
export const chunkInput = (chunk: Pick<ChunkRecord, 'title' | 'headingPath' | 'text'>) =>
  [chunk.title, chunk.headingPath.join(' › '), chunk.text].filter(Boolean).join('\n');

export const packVector = (values: readonly number[]): Uint8Array => Buffer.from(Float32Array.from(values).buffer);

/** A stored chunk's vector (as written, or as MongoDB's driver returns a binary), copied into its own aligned array. */
export function chunkVector(chunk: Pick<ChunkRecord, 'vector'>): Float32Array | undefined {
  const stored = chunk.vector as Uint8Array | { buffer: Uint8Array; position?: number } | undefined;
  const bytes = stored instanceof Uint8Array ? stored : stored?.buffer.subarray(0, stored.position ?? stored.buffer.byteLength);
  if (!(bytes instanceof Uint8Array) || bytes.byteLength === 0 || bytes.byteLength % 4 !== 0) return undefined;
  return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
}

export function createEmbedder(
  configured: { label: string; model: EmbeddingModel; dimensions: number | undefined },
  onQueryFailure: (error: unknown) => void,
): Embedder {
  const { label, model, dimensions } = configured;
  const sized = dimensions ? { dimensions } : {};
  return {
    label,
    async embedChunks(chunks) {
      const out: ChunkRecord[] = [];
      for (let start = 0; start < chunks.length; start += BATCH) {
        const batch = chunks.slice(start, start + BATCH);
        const { embeddings } = await withDeadline(INGEST_DEADLINE_MS, (abortSignal) =>
          embedMany({ model, values: batch.map(chunkInput), ...sized, maxParallelCalls: 1, abortSignal, telemetry: MODEL_TELEMETRY }),
        );
        batch.forEach((chunk, at) => out.push({ ...chunk, vector: packVector(embeddings[at] ?? []), embeddingModel: label }));
      }
      return out;
    },
    async embedQuery(text) {
      try {
        const { embedding } = await withDeadline(QUERY_DEADLINE_MS, (abortSignal) =>
          embed({ model, value: text, ...sized, maxRetries: 0, abortSignal, telemetry: MODEL_TELEMETRY }),
        );
        return Float32Array.from(embedding);
      } catch (error) {
        onQueryFailure(error);
        return undefined;
      }
    },
  };
}

/** The feature's embedder: a failed query embedding is logged and counted, and that search stays lexical. */
export function createKnowledgeEmbedder(
  configured: Parameters<typeof createEmbedder>[0],
  logger: { warn(message: string, fields: Record<string, unknown>): void },
  metrics: { increment(name: string, labels?: Record<string, string>): void },
): Embedder {
  return createEmbedder(configured, (error) => {
    metrics.increment('knowledge_embedding_failed_total', { stage: 'query' });
    logger.warn('knowledge-embedding-failed', { stage: 'query', error });
  });
}
