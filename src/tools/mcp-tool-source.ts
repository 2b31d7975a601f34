/**
 * Owns the connection to the business's MCP server and the catalogue of reads it offers: lists
 * every page of tools, admits only those whose annotations say read-only, gives each a category
 * and calls them with a timeout, parsing and size-capping what comes back.
 *
 * Must never offer or call a tool outside the admitted read set — a write tool the server lists
 * is refused here, at the connection, whoever asks for it and however — and must never hand on
 * a result larger than the cap: results are untrusted text. A read outside the public
 * categories is admitted only when it declares the arguments that scope it to the caller
 * (`_meta.scopeArguments` or the operator's mapping); those are hidden from the model and bound
 * here, at call time, to the verified caller, who also travels in the request's `_meta`.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ToolListChangedNotificationSchema, type Tool, type ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { AppError, ConfigError, errorText } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { createMcpLink, McpUnavailableError } from './mcp-link.js';
import { deriveToolCategory, modelFacingSchema } from './mcp-listing.js';
import { capText, cappedResult, isSchemaFailure, notCalledBecause, resultText } from './mcp-results.js';
import { bindArguments, callerMeta, ToolScopeError } from './scope.js';
import type { AssistantTool, Caller, ScopeBinding, ToolAccess, ToolCallContext, ToolEffect } from '../contracts/tool.js';

const DEFAULT_RESULT_CHAR_CAP = 8000;
const MINIMUM_RESULT_CHAR_CAP = 100;
const DEFAULT_CALL_TIMEOUT_MS = 15_000;
/** Categories anyone may read (no identity needed) unless the operator says otherwise. */
const DEFAULT_PUBLIC_CATEGORIES = ['catalog', 'knowledge', 'help', 'pricing'] as const;
/** Key of a listed tool's `_meta` naming its scoped arguments: `{ "<argument>": "customer" | "entity" }`. */
const SCOPE_ARGUMENTS_META_KEY = 'scopeArguments';
// A server that hands out cursors forever must not keep a listing running forever.
const MAX_LISTING_PAGES = 1000;
// The catalogues while nothing is listed: one array each, so their identity changes only with a listing.
const NO_READS: readonly AssistantTool[] = Object.freeze([]);
const NO_WRITES: readonly McpWriteTool[] = Object.freeze([]);

export { McpUnavailableError };

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
  /** Categories anyone may read; any other read must be scoped to the caller (default DEFAULT_PUBLIC_CATEGORIES). */
  publicCategories?: readonly string[];
  /** Tool → its scoped arguments, for servers whose metadata declares none; wins over `_meta.scopeArguments`. */
  scopeArguments?: Readonly<Record<string, Readonly<Record<string, ScopeBinding>>>>;
  logger: Logger;
  metrics: Metrics;
  /** Most characters a result may have, truncation marker included (default 8000). */
  resultCharCap?: number;
  /** Per request: connect, each listing page, each call (default 15 s). */
  callTimeoutMs?: number;
  /** Reconnection backoff: the first wait (default 500 ms), doubled up to `maxMs` (default 15 s). */
  retry?: { firstMs?: number; maxMs?: number };
}

/**
 * A write the server lists (not read-only), as the actions module sees it: never an
 * `AssistantTool`, so nothing the orchestrator holds can call it. Admitted only with scoped
 * arguments (a write for "anyone" is refused at listing, as an unscoped read is).
 */
export interface McpWriteTool {
  name: string;
  /** The server's human title (`title`, `annotations.title`), else the name. */
  title: string;
  description: string;
  category: string;
  effect: 'reversible' | 'irreversible';
  access: Extract<ToolAccess, { kind: 'caller' }>;
  /** The schema the model sees: the scoped arguments left out. */
  inputSchema: { jsonSchema: Record<string, unknown> };
  /** Argument names the model may write (undefined: any). */
  declared: ReadonlySet<string> | undefined;
}

/** Key of the request `_meta` carrying a write's idempotency key: a repeated key must not act twice. */
const IDEMPOTENCY_META_KEY = 'wa-assistant/idempotency-key';

export interface McpToolSource {
  /** Connects, lists every tool and admits the reads; throws McpUnavailableError when it can't. */
  connect(): Promise<void>;
  /**
   * Connects, or logs `mcp-unavailable` and keeps trying in the background with backoff until it
   * connects or is closed; does the same when an open connection is lost (the catalogue is
   * listed again on each reconnection). Turns go on without the business's data meanwhile.
   * Resolves after the first attempt, whatever its outcome; never throws.
   */
  start(): Promise<void>;
  /**
   * True while a session with the server is open and its tools are listed. False before the
   * first connection, while the server is down (the catalogues are then empty: an empty
   * `writeTools()` with `connected()` false means "the server is down", not "it has no such
   * tool") and once closed.
   */
  connected(): boolean;
  /**
   * Resolves once connected (at once when it is), the catalogues listed; rejects with
   * McpUnavailableError when the source is closed or `signal` aborts first.
   */
  whenConnected(signal?: AbortSignal): Promise<void>;
  /** The admitted reads, as of the latest listing. */
  tools(): readonly AssistantTool[];
  /** Calls an admitted read by name; any other name throws without reaching the server. */
  call(name: string, input: unknown, context: ToolCallContext): Promise<unknown>;
  /** The admitted writes (scoped ones only), as of the latest listing. */
  writeTools(): readonly McpWriteTool[];
  /**
   * The write path, for confirmed actions only: calls an admitted write with arguments already
   * bound and frozen, the caller and the idempotency key in `_meta`. Never reachable by name from
   * a model; a read's name or an unknown one throws without reaching the server.
   */
  callWrite(
    name: string,
    boundArguments: Readonly<Record<string, unknown>>,
    call: { caller: Caller; idempotencyKey: string; signal: AbortSignal },
  ): Promise<unknown>;
  /** Lists the tools again (also done on the server's `tools/list_changed`). */
  refresh(): Promise<void>;
  close(): Promise<void>;
}

/** Throws McpUnavailableError unless `source` is connected (readiness: the MCP server is down meanwhile). */
export function assertMcpConnected(source: Pick<McpToolSource, 'connected'>): void {
  if (!source.connected()) throw new McpUnavailableError('the MCP server is not connected; reconnecting in the background');
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

const ToolArgumentsSchema = z.record(z.string(), z.unknown());
const ScopeArgumentsSchema = z.record(z.string().min(1), z.enum(['customer', 'entity']));

interface AdmittedTool {
  tool: AssistantTool;
  /** The argument names the model may write (undefined: the schema lists none, so any). */
  declared: ReadonlySet<string> | undefined;
}

export function createMcpToolSource(options: McpToolSourceOptions): McpToolSource {
  const resultCharCap = options.resultCharCap ?? DEFAULT_RESULT_CHAR_CAP;
  if (!Number.isInteger(resultCharCap) || resultCharCap < MINIMUM_RESULT_CHAR_CAP) {
    throw new ConfigError(`MCP resultCharCap must be an integer of at least ${MINIMUM_RESULT_CHAR_CAP}, got ${resultCharCap}`);
  }
  const timeout = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  const defaultCategory = options.defaultCategory ?? 'general';
  const publicCategories = new Set<string>(options.publicCategories ?? DEFAULT_PUBLIC_CATEGORIES);
  // Only the origin: a URL may carry a key in its query string.
  const origin = new URL(options.url).origin;
  const logger = options.logger.child({ mcpServer: origin });

  let connection: { client: Client; transport: StreamableHTTPClientTransport } | undefined;
  let admitted = new Map<string, AdmittedTool>();
  let catalogue: readonly AssistantTool[] = NO_READS;
  let writes = new Map<string, McpWriteTool>();
  let writeCatalogue: readonly McpWriteTool[] = NO_WRITES;
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

  /** The read as the orchestrator sees it, or undefined when it reads customer data it can't be scoped to (or its scope is malformed). */
  function toAdmittedTool(tool: Tool): AdmittedTool | undefined {
    const category = deriveToolCategory(tool, options.categoryPrefixes, defaultCategory);
    const declaredScope = ScopeArgumentsSchema.safeParse(options.scopeArguments?.[tool.name] ?? tool._meta?.[SCOPE_ARGUMENTS_META_KEY] ?? {});
    // A scope the server meant to declare but got wrong is refused, never read as "public".
    if (!declaredScope.success) return undefined;
    const scoped = declaredScope.data;
    let access: ToolAccess;
    if (Object.keys(scoped).length > 0) access = { kind: 'caller', arguments: scoped };
    else if (publicCategories.has(category)) access = { kind: 'public' };
    else return undefined;
    const { jsonSchema, declared } = modelFacingSchema(tool.inputSchema, Object.keys(scoped));
    return {
      declared,
      tool: {
        name: tool.name,
        description: tool.description ?? tool.title ?? tool.name,
        origin: 'mcp',
        category,
        effect: 'read',
        access,
        inputSchema: { jsonSchema },
        execute: (input, context) => call(tool.name, input, context),
      },
    };
  }

  async function loadCatalogue(): Promise<void> {
    const listedOn = connection;
    if (!listedOn) throw new McpUnavailableError(`MCP tool source for ${origin} is not connected`);
    let listed: Tool[];
    try {
      listed = await listAllTools(listedOn.client);
    } catch (error) {
      if (error instanceof McpUnavailableError) throw error;
      throw new McpUnavailableError(`MCP server at ${origin} did not list its tools: ${String(error)}`, { cause: error });
    }
    // A listing that outlived its connection (lost or closed meanwhile) changes nothing.
    if (connection !== listedOn) throw new McpUnavailableError(`MCP server at ${origin}: the connection was lost during the listing`);
    const reads = new Map<string, AdmittedTool>();
    const writable = new Map<string, McpWriteTool>();
    const refused: string[] = [];
    const unscoped: string[] = [];
    for (const tool of listed) {
      if (deriveToolEffect(tool.annotations) !== 'read') {
        const write = toWriteTool(tool);
        if (write && !writable.has(tool.name)) writable.set(tool.name, write);
        else refused.push(tool.name);
      } else if (!reads.has(tool.name)) {
        const read = toAdmittedTool(tool);
        if (read) reads.set(tool.name, read);
        else unscoped.push(tool.name);
      }
    }
    admitted = reads;
    writes = writable;
    writeCatalogue = Object.freeze([...writable.values()]);
    catalogue = Object.freeze([...reads.values()].map((read) => read.tool));
    if (refused.length > 0) logger.debug('mcp-tool-refused', { count: refused.length, names: refused.slice(0, 20) });
    // Default-deny: a read of customer data that names no scoped argument could return anyone's.
    if (unscoped.length > 0) {
      logger.warn('mcp-tool-unscoped', {
        count: unscoped.length,
        names: unscoped.slice(0, 20),
        publicCategories: [...publicCategories],
        fix: `declare _meta.${SCOPE_ARGUMENTS_META_KEY} on the tool or map it in MCP_SCOPE_ARGUMENTS`,
      });
    }
    logger.info('mcp-tools-listed', { admitted: reads.size, writes: writable.size, refused: refused.length, unscoped: unscoped.length });
  }

  /** A write with its scoped arguments, or undefined (no scope: it could act for anyone). */
  function toWriteTool(tool: Tool): McpWriteTool | undefined {
    const declaredScope = ScopeArgumentsSchema.safeParse(options.scopeArguments?.[tool.name] ?? tool._meta?.[SCOPE_ARGUMENTS_META_KEY] ?? {});
    if (!declaredScope.success || Object.keys(declaredScope.data).length === 0) return undefined;
    const { jsonSchema, declared } = modelFacingSchema(tool.inputSchema, Object.keys(declaredScope.data));
    const effect = deriveToolEffect(tool.annotations) === 'reversible' ? 'reversible' : 'irreversible';
    return {
      name: tool.name,
      title: tool.title ?? tool.annotations?.title ?? tool.name,
      description: tool.description ?? tool.title ?? tool.name,
      category: deriveToolCategory(tool, options.categoryPrefixes, defaultCategory),
      effect,
      access: { kind: 'caller', arguments: declaredScope.data, effect },
      inputSchema: { jsonSchema },
      declared,
    };
  }

  async function callWrite(
    name: string,
    boundArguments: Readonly<Record<string, unknown>>,
    request: { caller: Caller; idempotencyKey: string; signal: AbortSignal },
  ): Promise<unknown> {
    const open = connection;
    if (!writes.has(name) || !open) {
      countCall(name, 'refused');
      throw new McpToolCallError(name, 'not-admitted', `MCP tool ${name} ${notCalledBecause(open, 'write')}`);
    }
    let response: unknown;
    try {
      response = await open.client.callTool(
        { name, arguments: { ...boundArguments }, _meta: { ...callerMeta(request.caller), [IDEMPOTENCY_META_KEY]: request.idempotencyKey } },
        CallToolResultSchema,
        { signal: request.signal, timeout },
      );
    } catch (error) {
      countCall(name, request.signal.aborted ? 'aborted' : 'failed');
      if (!request.signal.aborted && !isSchemaFailure(error)) suspect(open.client);
      throw new McpToolCallError(name, isSchemaFailure(error) ? 'malformed-result' : 'call-failed', `MCP tool ${name} failed: ${errorText(error)}`, {
        cause: error,
      });
    }
    const result = CallToolResultSchema.safeParse(response);
    if (!result.success) {
      countCall(name, 'malformed');
      throw new McpToolCallError(name, 'malformed-result', `MCP tool ${name} returned a malformed result`, { cause: result.error });
    }
    if (result.data.isError === true) {
      countCall(name, 'tool_error');
      throw new McpToolCallError(name, 'tool-error', capText(resultText(result.data), resultCharCap));
    }
    countCall(name, 'success');
    return cappedResult(result.data, resultCharCap);
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
    const read = admitted.get(name);
    const open = connection;
    if (!read || !open) {
      countCall(name, 'refused');
      throw new McpToolCallError(name, 'not-admitted', `MCP tool ${name} ${notCalledBecause(open, 'read')}`);
    }
    const parsedInput = ToolArgumentsSchema.safeParse(input ?? {});
    if (!parsedInput.success) {
      countCall(name, 'invalid_input');
      throw new McpToolCallError(name, 'invalid-input', `MCP tool ${name} takes an object of arguments`, { cause: parsedInput.error });
    }
    let bound: Record<string, unknown>;
    try {
      bound = bindArguments(name, read.tool.access ?? { kind: 'public' }, read.declared, parsedInput.data, context.caller);
    } catch (error) {
      if (error instanceof ToolScopeError) countCall(name, 'scope_denied');
      throw error;
    }
    let response: unknown;
    try {
      response = await open.client.callTool({ name, arguments: bound, _meta: callerMeta(context.caller) }, CallToolResultSchema, {
        signal: context.signal,
        timeout,
      });
    } catch (error) {
      const malformed = isSchemaFailure(error);
      countCall(name, malformed ? 'malformed' : context.signal.aborted ? 'aborted' : 'failed');
      if (!malformed && !context.signal.aborted) suspect(open.client);
      const detail = errorText(error);
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

  let closed = false;
  let verifying = false;

  /** Something failed on `client`'s connection: a ping tells a lost session from one failed request. */
  function suspect(client: Client): void {
    if (verifying || connection?.client !== client) return;
    verifying = true;
    client
      .ping({ timeout })
      .then(
        () => undefined,
        (error: unknown) => drop(client, error),
      )
      .finally(() => {
        verifying = false;
      });
  }

  /** The session is gone (the server down, or restarted without it): empty catalogues, then reconnect. */
  function drop(client: Client, error: unknown): void {
    if (connection?.client !== client) return;
    connection = undefined;
    admitted = new Map();
    writes = new Map();
    catalogue = NO_READS;
    writeCatalogue = NO_WRITES;
    link.lost(error);
    void client.close().catch(() => undefined);
  }

  async function connect(): Promise<void> {
    if (connection) throw new Error('MCP tool source is already connected');
    const client = new Client({ name: 'wa-assistant', version: '0.1.0' });
    const transport = new StreamableHTTPClientTransport(new URL(options.url), {
      requestInit: { headers: options.headers ?? {} },
    });
    client.onerror = (error) => {
      if (connection?.client !== client) return;
      logger.warn('mcp-transport-failed', { error });
      suspect(client);
    };
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      refresh().catch((error: unknown) => logger.warn('mcp-tools-refresh-failed', { error }));
    });
    try {
      await client.connect(transport, { timeout });
      if (closed) throw new Error('the MCP tool source was closed');
    } catch (error) {
      await client.close().catch(() => undefined);
      throw new McpUnavailableError(`MCP server at ${origin} is unavailable: ${String(error)}`, { cause: error });
    }
    connection = { client, transport };
    try {
      await refresh();
    } catch (error) {
      if (connection?.client === client) connection = undefined;
      await client.close().catch(() => undefined);
      throw error;
    }
    link.up();
  }

  const link = createMcpLink({
    connect,
    logger,
    metrics: options.metrics,
    ...(options.retry?.firstMs === undefined ? {} : { firstRetryMs: options.retry.firstMs }),
    ...(options.retry?.maxMs === undefined ? {} : { maxRetryMs: options.retry.maxMs }),
  });

  return {
    connect,
    start: () => link.reconnect(),
    connected: () => link.state() === 'connected',
    whenConnected: (signal) => link.whenUp(signal),
    tools: () => catalogue,
    call,
    writeTools: () => writeCatalogue,
    callWrite,
    refresh,
    async close() {
      closed = true;
      link.close();
      const closing = connection;
      connection = undefined;
      admitted = new Map();
      writes = new Map();
      writeCatalogue = NO_WRITES;
      catalogue = NO_READS;
      if (!closing) return;
      // Ends the server-side session; a server without sessions answers 405, which is fine.
      await closing.transport.terminateSession().catch(() => undefined);
      await closing.client.close();
    },
  };
}
