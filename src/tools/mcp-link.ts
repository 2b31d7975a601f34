/**
 * Keeps the MCP tool source connected: tries to connect at start, and when that fails (the
 * business's server down or unreachable) or an open connection is lost, tries again in the
 * background with backoff (`firstRetryMs` doubling to `maxRetryMs`) until it connects or is
 * closed. Logs once per state change — `mcp-unavailable` when the server goes (or is found) down,
 * `mcp-connected` when a connection is open — never once per attempt; failed attempts are
 * counted in `mcp_connect_failures_total`, the state is the gauge `mcp_connected` (1 or 0).
 * Tells callers waiting for the server (`whenUp`) as soon as it is back.
 */
import { AppError } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';

/** The business's MCP server could not be reached or would not list its tools. */
export class McpUnavailableError extends AppError {}

export type McpLinkState = 'connecting' | 'connected' | 'down' | 'closed';

export interface McpLinkOptions {
  /** Opens the connection and loads the catalogue; throws when it can't. */
  connect(): Promise<void>;
  logger: Logger;
  metrics: Metrics;
  /** The wait after the first failed attempt (default 500 ms); doubled after each further one. */
  firstRetryMs?: number;
  /** The longest wait between two attempts (default 15 s). */
  maxRetryMs?: number;
}

export interface McpLink {
  /**
   * Tries to connect now and, if that fails, keeps trying in the background; resolves after the
   * first try whatever its outcome. Does nothing while connected or already trying.
   */
  reconnect(): Promise<void>;
  /** A connection was opened (by `reconnect` or directly). */
  up(): void;
  /** The open connection was lost: logged once, and `reconnect` runs in the background. */
  lost(error: unknown): void;
  state(): McpLinkState;
  /** Resolves once connected (at once if it is); rejects with McpUnavailableError when closed or `signal` aborts first. */
  whenUp(signal?: AbortSignal): Promise<void>;
  close(): void;
}

const DEFAULT_FIRST_RETRY_MS = 500;
const DEFAULT_MAX_RETRY_MS = 15_000;

export function createMcpLink(options: McpLinkOptions): McpLink {
  const { logger, metrics } = options;
  const firstRetryMs = options.firstRetryMs ?? DEFAULT_FIRST_RETRY_MS;
  const maxRetryMs = options.maxRetryMs ?? DEFAULT_MAX_RETRY_MS;
  let state: McpLinkState = 'connecting';
  let downSince: number | undefined;
  let trying: Promise<void> | undefined;
  let wake: (() => void) | undefined;
  const waiters = new Set<{ resolve(): void; reject(error: Error): void }>();

  const isClosed = () => state === 'closed';
  const setState = (next: McpLinkState) => {
    state = next;
    metrics.setGauge('mcp_connected', next === 'connected' ? 1 : 0);
  };
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        wake = undefined;
        resolve();
      }, ms);
      wake = () => {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      };
    });

  const goDown = (error: unknown, reason: 'unreachable' | 'connection-lost') => {
    if (state === 'down' || state === 'closed') return;
    setState('down');
    downSince = Date.now();
    logger.error('mcp-unavailable', { reason, error, firstRetryInMs: reason === 'connection-lost' ? 0 : firstRetryMs, maxRetryMs });
  };

  const up = () => {
    if (state === 'connected' || state === 'closed') return;
    const downForMs = downSince === undefined ? undefined : Date.now() - downSince;
    setState('connected');
    downSince = undefined;
    logger.info('mcp-connected', downForMs === undefined ? {} : { downForMs });
    for (const waiter of waiters) waiter.resolve();
    waiters.clear();
  };

  /** One attempt now, then (if it failed) the rest in the background; resolves after the first. */
  const attempts = (): Promise<void> => {
    let firstDone: () => void = () => undefined;
    const first = new Promise<void>((resolve) => (firstDone = resolve));
    const run = async () => {
      for (let attempt = 1; state !== 'closed' && state !== 'connected'; attempt += 1) {
        try {
          await options.connect();
          up();
        } catch (error) {
          if (isClosed()) break;
          metrics.increment('mcp_connect_failures_total');
          goDown(error, 'unreachable');
          firstDone();
          await pause(Math.min(firstRetryMs * 2 ** (attempt - 1), maxRetryMs));
        }
      }
      firstDone();
    };
    trying = run().finally(() => {
      trying = undefined;
    });
    return first;
  };

  return {
    reconnect() {
      if (state === 'connected' || state === 'closed') return Promise.resolve();
      return trying ? Promise.resolve() : attempts();
    },
    up,
    lost(error) {
      if (state !== 'connected') return;
      goDown(error, 'connection-lost');
      if (!trying) void attempts();
    },
    state: () => state,
    whenUp(signal) {
      if (state === 'connected') return Promise.resolve();
      if (state === 'closed') return Promise.reject(new McpUnavailableError('the MCP tool source is closed'));
      if (signal?.aborted) return Promise.reject(new McpUnavailableError('stopped waiting for the MCP server'));
      return new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          waiters.delete(waiter);
          reject(new McpUnavailableError('stopped waiting for the MCP server'));
        };
        const waiter = {
          resolve: () => {
            signal?.removeEventListener('abort', onAbort);
            resolve();
          },
          reject: (error: Error) => {
            signal?.removeEventListener('abort', onAbort);
            reject(error);
          },
        };
        waiters.add(waiter);
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    },
    close() {
      setState('closed');
      wake?.();
      for (const waiter of waiters) waiter.reject(new McpUnavailableError('the MCP tool source is closed'));
      waiters.clear();
    },
  };
}
