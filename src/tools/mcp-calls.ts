/**
 * One call to an admitted MCP tool over an open session: a read with its scoped arguments bound
 * to the verified caller, or a confirmed write with arguments already bound and its idempotency
 * key; what comes back parsed and size-capped (results are untrusted text). The gate (is the name
 * admitted, is a session open) is the source's (`mcp-tool-source.ts`).
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { AppError, errorText } from '../errors/index.js';
import type { AdmittedTool } from './mcp-admission.js';
import { capText, cappedResult, isSchemaFailure, resultText } from './mcp-results.js';
import { bindArguments, callerMeta, ToolScopeError } from './scope.js';
import type { Caller, ToolCallContext } from '../contracts/tool.js';

/** Key of the request `_meta` carrying a write's idempotency key: a repeated key must not act twice. */
const IDEMPOTENCY_META_KEY = 'wa-assistant/idempotency-key';
const ToolArgumentsSchema = z.record(z.string(), z.unknown());

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

/** What a call needs from its source: the session, the deadline and cap, the counter, and who to tell a connection failed. */
export interface CallSession {
  client: Client;
  timeout: number;
  resultCharCap: number;
  countCall(tool: string, outcome: string): void;
  /** Something failed on the session: the source checks whether it is lost. */
  suspect(client: Client): void;
}

/** Calls an admitted read: its input checked, its scoped arguments bound to `context.caller`. */
export async function callRead(session: CallSession, name: string, read: AdmittedTool, input: unknown, context: ToolCallContext): Promise<unknown> {
  const { resultCharCap, countCall } = session;
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
  const params = { name, arguments: bound, _meta: callerMeta(context.caller) };
  const result = await sendCall(session, params, context.signal);
  if (result.isError === true) {
    countCall(name, 'tool_error');
    throw new McpToolCallError(name, 'tool-error', `MCP tool ${name} returned an error: ${capText(resultText(result), resultCharCap)}`);
  }
  countCall(name, 'success');
  return cappedResult(result, resultCharCap);
}

/** Calls an admitted write with its bound arguments, the caller and the idempotency key in `_meta`. */
export async function callWriteTool(
  session: CallSession,
  name: string,
  boundArguments: Readonly<Record<string, unknown>>,
  request: { caller: Caller; idempotencyKey: string; signal: AbortSignal },
): Promise<unknown> {
  const { resultCharCap, countCall } = session;
  const meta = { ...callerMeta(request.caller), [IDEMPOTENCY_META_KEY]: request.idempotencyKey };
  const result = await sendCall(session, { name, arguments: { ...boundArguments }, _meta: meta }, request.signal);
  if (result.isError === true) {
    countCall(name, 'tool_error');
    throw new McpToolCallError(name, 'tool-error', capText(resultText(result), resultCharCap));
  }
  countCall(name, 'success');
  return cappedResult(result, resultCharCap);
}

/**
 * Sends one call and checks the shape of what comes back: a failed or aborted call, and a result
 * that is not a tool result, are counted and thrown as `McpToolCallError`s; a failure that is not
 * the result's shape or an abort tells the source its session may be lost.
 */
async function sendCall(session: CallSession, params: Parameters<Client['callTool']>[0], signal: AbortSignal): Promise<CallToolResult> {
  const { client, timeout, countCall } = session;
  const name = params.name;
  let response: unknown;
  try {
    response = await client.callTool(params, CallToolResultSchema, { signal, timeout });
  } catch (error) {
    const malformed = isSchemaFailure(error);
    countCall(name, malformed ? 'malformed' : signal.aborted ? 'aborted' : 'failed');
    if (!malformed && !signal.aborted) session.suspect(client);
    throw new McpToolCallError(name, malformed ? 'malformed-result' : 'call-failed', `MCP tool ${name} failed: ${errorText(error)}`, { cause: error });
  }
  const result = CallToolResultSchema.safeParse(response);
  if (!result.success) {
    countCall(name, 'malformed');
    throw new McpToolCallError(name, 'malformed-result', `MCP tool ${name} returned a malformed result`, { cause: result.error });
  }
  return result.data;
}
