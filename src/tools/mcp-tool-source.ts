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
import { ToolListChangedNotificationSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { ConfigError } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { admitTools, listAllTools, logAdmission, type AdmissionPolicy, type AdmittedTool, type McpWriteTool } from './mcp-admission.js';
import { callRead, callWriteTool, McpToolCallError, type CallSession } from './mcp-calls.js';
import { createMcpLink, McpUnavailableError } from './mcp-link.js';
import { notCalledBecause } from './mcp-results.js';
import type { AssistantTool, Caller, ScopeBinding, ToolCallContext } from '../contracts/tool.js';

const DEFAULT_RESULT_CHAR_CAP = 8000;
const MINIMUM_RESULT_CHAR_CAP = 100;
const DEFAULT_CALL_TIMEOUT_MS = 15_000;
/** Categories anyone may read (no identity needed) unless the operator says otherwise. */
const DEFAULT_PUBLIC_CATEGORIES = ['catalog', 'knowledge', 'help', 'pricing'] as const;
/** What the latest listing admitted: by name (the gate) and as the catalogues hand them out. */
interface Catalogues {
  admitted: ReadonlyMap<string, AdmittedTool>;
  writes: ReadonlyMap<string, McpWriteTool>;
  catalogue: readonly AssistantTool[];
  writeCatalogue: readonly McpWriteTool[];
}
// The catalogues while nothing is listed: one array each, so their identity changes only with a listing.
const NOTHING_LISTED: Catalogues = Object.freeze({
  admitted: new Map<string, AdmittedTool>(),
  writes: new Map<string, McpWriteTool>(),
  catalogue: Object.freeze([]),
  writeCatalogue: Object.freeze([]),
});

export { McpUnavailableError };
export { deriveToolEffect, type McpWriteTool } from './mcp-admission.js';
export { McpToolCallError } from './mcp-calls.js';

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

function resultCharCapOf(options: McpToolSourceOptions): number {
  const resultCharCap = options.resultCharCap ?? DEFAULT_RESULT_CHAR_CAP;
  if (!Number.isInteger(resultCharCap) || resultCharCap < MINIMUM_RESULT_CHAR_CAP) {
    throw new ConfigError(`MCP resultCharCap must be an integer of at least ${MINIMUM_RESULT_CHAR_CAP}, got ${resultCharCap}`);
  }
  return resultCharCap;
}

function admissionPolicy(options: McpToolSourceOptions): AdmissionPolicy {
  return {
    categoryPrefixes: options.categoryPrefixes,
    defaultCategory: options.defaultCategory ?? 'general',
    publicCategories: new Set<string>(options.publicCategories ?? DEFAULT_PUBLIC_CATEGORIES),
    scopeArguments: options.scopeArguments,
  };
}

/** One run of `run` at a time; a request during a run queues exactly one more (after it, whatever its outcome). */
function oneAtATime(run: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  const request = (): Promise<void> => {
    if (!running) {
      running = run().finally(() => {
        running = undefined;
      });
      return running;
    }
    next ??= running
      .catch(() => undefined)
      .then(() => {
        next = undefined;
        return request();
      });
    return next;
  };
  return request;
}

/** A session with the server, connected (its errors and list changes reported to `hooks`); McpUnavailableError when it can't be. */
async function openSession(
  options: Pick<McpToolSourceOptions, 'url' | 'headers'>,
  origin: string,
  timeout: number,
  hooks: { onError(client: Client, error: Error): void; onListChanged(): void; closed(): boolean },
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: 'wa-assistant', version: '0.1.0' });
  const transport = new StreamableHTTPClientTransport(new URL(options.url), {
    requestInit: { headers: options.headers ?? {} },
  });
  client.onerror = (error) => hooks.onError(client, error);
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => hooks.onListChanged());
  try {
    await client.connect(transport, { timeout });
    if (hooks.closed()) throw new Error('the MCP tool source was closed');
  } catch (error) {
    await client.close().catch(() => undefined);
    throw new McpUnavailableError(`MCP server at ${origin} is unavailable: ${String(error)}`, { cause: error });
  }
  return { client, transport };
}

/** Every page of the server's tools; McpUnavailableError when it did not list them. */
async function listTools(client: Client, timeout: number, origin: string): Promise<Tool[]> {
  try {
    return await listAllTools(client, timeout, origin);
  } catch (error) {
    if (error instanceof McpUnavailableError) throw error;
    throw new McpUnavailableError(`MCP server at ${origin} did not list its tools: ${String(error)}`, { cause: error });
  }
}

/** What a listing admits (reads by the policy, writes as proposals), logged. */
function admitted(tools: Tool[], policy: AdmissionPolicy, call: Parameters<typeof admitTools>[2], logger: Logger): Catalogues {
  const admission = admitTools(tools, policy, call);
  const { reads, writable } = admission;
  const catalogues: Catalogues = {
    admitted: reads,
    writes: writable,
    writeCatalogue: Object.freeze([...writable.values()]),
    catalogue: Object.freeze([...reads.values()].map((read) => read.tool)),
  };
  logAdmission(admission, policy, logger);
  return catalogues;
}

/** Ends the server-side session (a server without sessions answers 405, which is fine) and the client. */
async function endSession(closing: { client: Client; transport: StreamableHTTPClientTransport }): Promise<void> {
  await closing.transport.terminateSession().catch(() => undefined);
  await closing.client.close();
}

/** The gate's refusal of a name outside the latest listing (or of any call while disconnected), counted. */
function refused(name: string, open: unknown, kind: 'read' | 'write', countCall: (tool: string, outcome: string) => void): McpToolCallError {
  countCall(name, 'refused');
  return new McpToolCallError(name, 'not-admitted', `MCP tool ${name} ${notCalledBecause(open, kind)}`);
}

/**
 * Something failed on a client's connection: a ping (one at a time) tells a lost session from
 * one failed request, and a lost one is `drop`ped. Only the `current` client is checked.
 */
function createSuspicion(timeout: number, current: () => Client | undefined, drop: (client: Client, error: unknown) => void): (client: Client) => void {
  let verifying = false;
  return (client) => {
    if (verifying || current() !== client) return;
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
  };
}

/** The reconnection's backoff, where the options set it. */
function retryOf(retry: McpToolSourceOptions['retry']): { firstRetryMs?: number; maxRetryMs?: number } {
  return {
    ...(retry?.firstMs === undefined ? {} : { firstRetryMs: retry.firstMs }),
    ...(retry?.maxMs === undefined ? {} : { maxRetryMs: retry.maxMs }),
  };
}

export function createMcpToolSource(options: McpToolSourceOptions): McpToolSource {
  const resultCharCap = resultCharCapOf(options);
  const timeout = options.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  const policy = admissionPolicy(options);
  // Only the origin: a URL may carry a key in its query string.
  const origin = new URL(options.url).origin;
  const logger = options.logger.child({ mcpServer: origin });

  let connection: { client: Client; transport: StreamableHTTPClientTransport } | undefined;
  let listed: Catalogues = NOTHING_LISTED;

  const countCall = (tool: string, outcome: string) => options.metrics.increment('mcp_calls_total', { tool, outcome });
  const session = (client: Client): CallSession => ({ client, timeout, resultCharCap, countCall, suspect });

  async function loadCatalogue(): Promise<void> {
    const listedOn = connection;
    if (!listedOn) throw new McpUnavailableError(`MCP tool source for ${origin} is not connected`);
    const tools = await listTools(listedOn.client, timeout, origin);
    // A listing that outlived its connection (lost or closed meanwhile) changes nothing.
    if (connection !== listedOn) throw new McpUnavailableError(`MCP server at ${origin}: the connection was lost during the listing`);
    listed = admitted(tools, policy, call, logger);
  }

  // One listing at a time; a change announced during a listing queues exactly one more.
  const refresh = oneAtATime(loadCatalogue);

  async function call(name: string, input: unknown, context: ToolCallContext): Promise<unknown> {
    // The gate: only names in the latest listing's read set ever reach the server.
    const read = listed.admitted.get(name);
    const open = connection;
    if (!read || !open) throw refused(name, open, 'read', countCall);
    return callRead(session(open.client), name, read, input, context);
  }

  async function callWrite(
    name: string,
    boundArguments: Readonly<Record<string, unknown>>,
    request: { caller: Caller; idempotencyKey: string; signal: AbortSignal },
  ): Promise<unknown> {
    const open = connection;
    if (!listed.writes.has(name) || !open) throw refused(name, open, 'write', countCall);
    return callWriteTool(session(open.client), name, boundArguments, request);
  }

  let closed = false;
  const suspect = createSuspicion(timeout, () => connection?.client, drop);

  /** The session is gone (the server down, or restarted without it): empty catalogues, then reconnect. */
  function drop(client: Client, error: unknown): void {
    if (connection?.client !== client) return;
    connection = undefined;
    listed = NOTHING_LISTED;
    link.lost(error);
    void client.close().catch(() => undefined);
  }

  async function connect(): Promise<void> {
    if (connection) throw new Error('MCP tool source is already connected');
    const opened = await openSession(options, origin, timeout, {
      onError(client, error) {
        if (connection?.client !== client) return;
        logger.warn('mcp-transport-failed', { error });
        suspect(client);
      },
      onListChanged() {
        refresh().catch((error: unknown) => logger.warn('mcp-tools-refresh-failed', { error }));
      },
      closed: () => closed,
    });
    const { client } = opened;
    connection = opened;
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
    ...retryOf(options.retry),
  });

  return {
    connect,
    start: () => link.reconnect(),
    connected: () => link.state() === 'connected',
    whenConnected: (signal) => link.whenUp(signal),
    tools: () => listed.catalogue,
    call,
    writeTools: () => listed.writeCatalogue,
    callWrite,
    refresh,
    async close() {
      closed = true;
      link.close();
      const closing = connection;
      connection = undefined;
      listed = NOTHING_LISTED;
      if (closing) await endSession(closing);
    },
  };
}
