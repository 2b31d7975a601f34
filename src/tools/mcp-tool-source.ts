/**
 * Owns the connection to the business's MCP server and the catalogue of reads it offers: lists
 * every page of tools, admits only those whose annotations say read-only, gives each a category
 * and calls them with a timeout, parsing and size-capping what comes back.
 *
 * Must never offer or call a tool outside the admitted read set — a write tool the server lists
 * is refused here, at the connection, whoever asks for it and however — and must never hand on
 * a result larger than the cap: results are untrusted text.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type Tool,
  type ToolAnnotations,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { AppError, ConfigError } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { AssistantTool, ToolCallContext, ToolEffect } from './tool.js';

const DEFAULT_RESULT_CHAR_CAP = 8000;
const MINIMUM_RESULT_CHAR_CAP = 100;
const DEFAULT_CALL_TIMEOUT_MS = 15_000;
// A server that hands out cursors forever must not keep a listing running forever.
const MAX_LISTING_PAGES = 1000;

/** The business's MCP server could not be reached or would not list its tools. */
export class McpUnavailableError extends AppError {}

export type McpToolCallFailure = 'not-admitted' | 'invalid-input' | 'tool-error' | 'malformed-result' | 'call-failed';

/** One MCP tool call failed; `reason` says how, `not-admitted` meaning it never reached the server. */
export class McpToolCallError extends AppError {
  constructor(
    readonly toolName: string,
    readonly reason: McpToolCallFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface McpToolSourceOptions {
  url: string;
  /** Sent with every request (e.g. the business's API key); never logged. */
  headers?: Record<string, string>;
  /** Name prefix → category, for tools whose metadata carries none; the longest match wins. */
  categoryPrefixes: Readonly<Record<string, string>>;
  /** Category of a tool with neither metadata nor a matching prefix (default `general`). */
  defaultCategory?: string;
  logger: Logger;
  metrics: Metrics;
  /** Most characters a result may have, truncation marker included (default 8000). */
  resultCharCap?: number;
  /** Per request: connect, each listing page, each call (default 15 s). */
  callTimeoutMs?: number;
}

export interface McpToolSource {
  /** Connects, lists every tool and admits the reads; throws McpUnavailableError when it can't. */
  connect(): Promise<void>;
  /** The admitted reads, as of the latest listing. */
  tools(): readonly AssistantTool[];
  /** Calls an admitted read by name; any other name throws without reaching the server. */
  call(name: string, input: unknown, context: ToolCallContext): Promise<unknown>;
  /** Lists the tools again (also done on the server's `tools/list_changed`). */
  refresh(): Promise<void>;
  close(): Promise<void>;
}

type McpToolEffect = Extract<ToolEffect, 'read' | 'reversible' | 'irreversible'>;

/**
 * A tool's effect from its MCP annotations. The spec's defaults apply to absent hints: a tool is
 * not read-only unless it says so, and a tool that isn't read-only is destructive unless it says
 * `destructiveHint: false`.
 */
export function deriveToolEffect(annotations: ToolAnnotations | undefined): McpToolEffect {
  if (annotations?.readOnlyHint === true) return 'read';
  return annotations?.destructiveHint === false ? 'reversible' : 'irreversible';
}

function deriveToolCategory(tool: Tool, prefixes: Readonly<Record<string, string>>, defaultCategory: string): string {
  const declared = tool._meta?.category;
  if (typeof declared === 'string' && declared.trim() !== '') return declared;
  let best: { prefix: string; category: string } | undefined;
  for (const [prefix, category] of Object.entries(prefixes)) {
    if (tool.name.startsWith(prefix) && prefix.length > (best?.prefix.length ?? -1)) best = { prefix, category };
  }
  return best?.category ?? defaultCategory;
}

/** Cuts `text` to at most `cap` characters, the marker saying how long it was included. */
function capText(text: string, cap: number): string {
  if (text.length <= cap) return text;
  const marker = `\n…[truncated: result was ${text.length} characters]`;
  let kept = text.slice(0, Math.max(0, cap - marker.length));
  // Don't leave half a surrogate pair at the cut.
  if (/[\uD800-\uDBFF]$/.test(kept)) kept = kept.slice(0, -1);
  return `${kept}${marker}`;
}

function resultText(result: CallToolResult): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : `[${block.type} content omitted]`)).join('\n');
}

/** Structured content when the server sent it and it fits the cap, else the capped text. */
function cappedResult(result: CallToolResult, cap: number): unknown {
  if (result.structuredContent !== undefined) {
    const serialized = JSON.stringify(result.structuredContent);
    return serialized.length <= cap ? result.structuredContent : capText(serialized, cap);
  }
  return capText(resultText(result), cap);
}

const ToolArgumentsSchema = z.record(z.string(), z.unknown());

function isSchemaFailure(error: unknown): boolean {
  return typeof error === 'object' && error !== null && 'issues' in error && Array.isArray(error.issues);
}

export function createMcpToolSource(options: McpToolSourceOptions): McpToolSource {
  const resultCharCap = options.resultCharCap ?? DEFAULT_RESULT_CHAR_CAP;
  if (!Number.isInteger(resultCharCap) || resultCharCap < MINIMUM_RESULT_CHAR_CAP) {
    throw new ConfigError(`MCP resultCharCap must be an integer of at least ${MINIMUM_RESULT_CHAR_CAP}, got ${resultCharCap}`);
  }
  const timeout = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  const defaultCategory = options.defaultCategory ?? 'general';
  // Only the origin: a URL may carry a key in its query string.
  const origin = new URL(options.url).origin;
  const logger = options.logger.child({ mcpServer: origin });

  let connection: { client: Client; transport: StreamableHTTPClientTransport } | undefined;
  let admitted = new Map<string, AssistantTool>();
  let catalogue: readonly AssistantTool[] = [];
  let listing: Promise<void> | undefined;
  let nextListing: Promise<void> | undefined;

  const countCall = (tool: string, outcome: string) => options.metrics.increment('mcp_calls_total', { tool, outcome });

  async function listAllTools(client: Client): Promise<Tool[]> {
    const listed: Tool[] = [];
    const seenCursors = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LISTING_PAGES; page += 1) {
      const result = await client.listTools(cursor === undefined ? undefined : { cursor }, { timeout });
      listed.push(...result.tools);
      cursor = result.nextCursor;
      if (cursor === undefined) return listed;
      if (seenCursors.has(cursor)) throw new McpUnavailableError(`MCP server at ${origin} repeated the tool-list cursor ${cursor}`);
      seenCursors.add(cursor);
    }
    throw new McpUnavailableError(`MCP server at ${origin} listed more than ${MAX_LISTING_PAGES} pages of tools`);
  }

  function toAssistantTool(tool: Tool): AssistantTool {
    return {
      name: tool.name,
      description: tool.description ?? tool.title ?? tool.name,
      origin: 'mcp',
      category: deriveToolCategory(tool, options.categoryPrefixes, defaultCategory),
      effect: 'read',
      inputSchema: { jsonSchema: tool.inputSchema },
      execute: (input, context) => call(tool.name, input, context),
    };
  }

  async function loadCatalogue(): Promise<void> {
    if (!connection) throw new McpUnavailableError(`MCP tool source for ${origin} is not connected`);
    let listed: Tool[];
    try {
      listed = await listAllTools(connection.client);
    } catch (error) {
      if (error instanceof McpUnavailableError) throw error;
      throw new McpUnavailableError(`MCP server at ${origin} did not list its tools: ${String(error)}`, { cause: error });
    }
    const reads = new Map<string, AssistantTool>();
    const refused: string[] = [];
    for (const tool of listed) {
      if (deriveToolEffect(tool.annotations) !== 'read') refused.push(tool.name);
      else if (!reads.has(tool.name)) reads.set(tool.name, toAssistantTool(tool));
    }
    admitted = reads;
    catalogue = Object.freeze([...reads.values()]);
    if (refused.length > 0) logger.debug('mcp-tool-refused', { count: refused.length, names: refused.slice(0, 20) });
    logger.info('mcp-tools-listed', { admitted: reads.size, refused: refused.length });
  }

  // One listing at a time; a change announced during a listing queues exactly one more.
  function refresh(): Promise<void> {
    if (!listing) {
      listing = loadCatalogue().finally(() => {
        listing = undefined;
      });
      return listing;
    }
    nextListing ??= listing
      .catch(() => undefined)
      .then(() => {
        nextListing = undefined;
        return refresh();
      });
    return nextListing;
  }

  async function call(name: string, input: unknown, context: ToolCallContext): Promise<unknown> {
    // The gate: only names in the latest listing's read set ever reach the server.
    if (!admitted.has(name) || !connection) {
      countCall(name, 'refused');
      throw new McpToolCallError(name, 'not-admitted', `MCP tool ${name} is not an admitted read tool; it was not called`);
    }
    const parsedInput = ToolArgumentsSchema.safeParse(input ?? {});
    if (!parsedInput.success) {
      countCall(name, 'invalid_input');
      throw new McpToolCallError(name, 'invalid-input', `MCP tool ${name} takes an object of arguments`, { cause: parsedInput.error });
    }
    let response: unknown;
    try {
      response = await connection.client.callTool({ name, arguments: parsedInput.data }, CallToolResultSchema, {
        signal: context.signal,
        timeout,
      });
    } catch (error) {
      const malformed = isSchemaFailure(error);
      countCall(name, malformed ? 'malformed' : context.signal.aborted ? 'aborted' : 'failed');
      const detail = error instanceof Error ? error.message : String(error);
      throw new McpToolCallError(name, malformed ? 'malformed-result' : 'call-failed', `MCP tool ${name} failed: ${detail}`, { cause: error });
    }
    const result = CallToolResultSchema.safeParse(response);
    if (!result.success) {
      countCall(name, 'malformed');
      throw new McpToolCallError(name, 'malformed-result', `MCP tool ${name} returned a malformed result`, { cause: result.error });
    }
    if (result.data.isError === true) {
      countCall(name, 'tool_error');
      throw new McpToolCallError(name, 'tool-error', `MCP tool ${name} returned an error: ${capText(resultText(result.data), resultCharCap)}`);
    }
    countCall(name, 'success');
    return cappedResult(result.data, resultCharCap);
  }

  return {
    async connect() {
      if (connection) throw new Error('MCP tool source is already connected');
      const client = new Client({ name: 'wa-assistant', version: '0.1.0' });
      const transport = new StreamableHTTPClientTransport(new URL(options.url), {
        requestInit: { headers: options.headers ?? {} },
      });
      client.onerror = (error) => logger.warn('mcp-transport-failed', { error });
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        refresh().catch((error: unknown) => logger.warn('mcp-tools-refresh-failed', { error }));
      });
      try {
        await client.connect(transport, { timeout });
      } catch (error) {
        await client.close().catch(() => undefined);
        throw new McpUnavailableError(`MCP server at ${origin} is unavailable: ${String(error)}`, { cause: error });
      }
      connection = { client, transport };
      try {
        await refresh();
      } catch (error) {
        connection = undefined;
        await client.close().catch(() => undefined);
        throw error;
      }
    },
    tools: () => catalogue,
    call,
    refresh,
    async close() {
      const closing = connection;
      connection = undefined;
      admitted = new Map();
      catalogue = [];
      if (!closing) return;
      // Ends the server-side session; a server without sessions answers 405, which is fine.
      await closing.transport.terminateSession().catch(() => undefined);
      await closing.client.close();
    },
  };
}
