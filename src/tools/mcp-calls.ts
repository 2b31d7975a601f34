/**
 * One call to an admitted MCP tool over an open session: a read with its scoped arguments bound
 * to the verified caller, or a confirmed write with arguments already bound and its idempotency
 * key; what comes back parsed and size-capped (results are untrusted text). The gate (is the name
 * admitted, is a session open) is the source's (`mcp-tool-source.ts`).
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
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
  const { client, timeout, resultCharCap, countCall } = session;
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
    response = await client.callTool({ name, arguments: bound, _meta: callerMeta(context.caller) }, CallToolResultSchema, {
      signal: context.signal,
      timeout,
    });
  } catch (error) {
    const malformed = isSchemaFailure(error);
    countCall(name, malformed ? 'malformed' : context.signal.aborted ? 'aborted' : 'failed');
    if (!malformed && !context.signal.aborted) session.suspect(client);
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

/** Calls an admitted write with its bound arguments, the caller and the idempotency key in `_meta`. */
export async function callWriteTool(
  session: CallSession,
  name: string,
  boundArguments: Readonly<Record<string, unknown>>,
  request: { caller: Caller; idempotencyKey: string; signal: AbortSignal },
): Promise<unknown> {
  const { client, timeout, resultCharCap, countCall } = session;
  let response: unknown;
  try {
    response = await client.callTool(
      { name, arguments: { ...boundArguments }, _meta: { ...callerMeta(request.caller), [IDEMPOTENCY_META_KEY]: request.idempotencyKey } },
      CallToolResultSchema,
      { signal: request.signal, timeout },
    );
  } catch (error) {
    countCall(name, request.signal.aborted ? 'aborted' : 'failed');
    if (!request.signal.aborted && !isSchemaFailure(error)) session.suspect(client);
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
