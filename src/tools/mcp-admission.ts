/**
 * Which of the tools an MCP server lists are admitted, and as what: a read (`readOnlyHint`) as an
 * `AssistantTool` when it is public by category or declares the arguments that scope it to the
 * caller; a write only with scoped arguments, as an `McpWriteTool` (never an `AssistantTool`).
 * Anything else is refused here, whoever asks for it.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { Logger } from '../logger.js';
import { McpUnavailableError } from './mcp-link.js';
import { deriveToolCategory, modelFacingSchema } from './mcp-listing.js';
import type { AssistantTool, ScopeBinding, ToolAccess, ToolCallContext, ToolEffect } from '../contracts/tool.js';

/** Key of a listed tool's `_meta` naming its scoped arguments: `{ "<argument>": "customer" | "entity" }`. */
const SCOPE_ARGUMENTS_META_KEY = 'scopeArguments';
// A server that hands out cursors forever must not keep a listing running forever.
const MAX_LISTING_PAGES = 1000;

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

const ScopeArgumentsSchema = z.record(z.string().min(1), z.enum(['customer', 'entity']));

export interface AdmittedTool {
  tool: AssistantTool;
  /** The argument names the model may write (undefined: the schema lists none, so any). */
  declared: ReadonlySet<string> | undefined;
}

/** How tools are categorised and which reads need no caller (from the source's options). */
export interface AdmissionPolicy {
  categoryPrefixes: Readonly<Record<string, string>>;
  defaultCategory: string;
  publicCategories: ReadonlySet<string>;
  scopeArguments: Readonly<Record<string, Readonly<Record<string, ScopeBinding>>>> | undefined;
}

/** How an admitted read is called (the source's gate: `call`). */
type ReadCall = (name: string, input: unknown, context: ToolCallContext) => Promise<unknown>;

/** Every page of the server's tools (bounded: a server handing out cursors forever is unavailable). */
export async function listAllTools(client: Client, timeout: number, origin: string): Promise<Tool[]> {
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
function toAdmittedTool(tool: Tool, policy: AdmissionPolicy, call: ReadCall): AdmittedTool | undefined {
  const category = deriveToolCategory(tool, policy.categoryPrefixes, policy.defaultCategory);
  const declaredScope = ScopeArgumentsSchema.safeParse(policy.scopeArguments?.[tool.name] ?? tool._meta?.[SCOPE_ARGUMENTS_META_KEY] ?? {});
  // A scope the server meant to declare but got wrong is refused, never read as "public".
  if (!declaredScope.success) return undefined;
  const scoped = declaredScope.data;
  let access: ToolAccess;
  if (Object.keys(scoped).length > 0) access = { kind: 'caller', arguments: scoped };
  else if (policy.publicCategories.has(category)) access = { kind: 'public' };
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

/** A write with its scoped arguments, or undefined (no scope: it could act for anyone). */
function toWriteTool(tool: Tool, policy: AdmissionPolicy): McpWriteTool | undefined {
  const declaredScope = ScopeArgumentsSchema.safeParse(policy.scopeArguments?.[tool.name] ?? tool._meta?.[SCOPE_ARGUMENTS_META_KEY] ?? {});
  if (!declaredScope.success || Object.keys(declaredScope.data).length === 0) return undefined;
  const { jsonSchema, declared } = modelFacingSchema(tool.inputSchema, Object.keys(declaredScope.data));
  const effect = deriveToolEffect(tool.annotations) === 'reversible' ? 'reversible' : 'irreversible';
  return {
    name: tool.name,
    title: tool.title ?? tool.annotations?.title ?? tool.name,
    description: tool.description ?? tool.title ?? tool.name,
    category: deriveToolCategory(tool, policy.categoryPrefixes, policy.defaultCategory),
    effect,
    access: { kind: 'caller', arguments: declaredScope.data, effect },
    inputSchema: { jsonSchema },
    declared,
  };
}

/** A listing's admitted reads and writes (first of a name wins), and the names refused (writes) or unscoped (reads). */
export function admitTools(listed: readonly Tool[], policy: AdmissionPolicy, call: ReadCall) {
  const reads = new Map<string, AdmittedTool>();
  const writable = new Map<string, McpWriteTool>();
  const refused: string[] = [];
  const unscoped: string[] = [];
  for (const tool of listed) {
    if (deriveToolEffect(tool.annotations) !== 'read') {
      const write = toWriteTool(tool, policy);
      if (write && !writable.has(tool.name)) writable.set(tool.name, write);
      else refused.push(tool.name);
    } else if (!reads.has(tool.name)) {
      const read = toAdmittedTool(tool, policy, call);
      if (read) reads.set(tool.name, read);
      else unscoped.push(tool.name);
    }
  }
  return { reads, writable, refused, unscoped };
}

/** Logs a listing's admission (once the catalogues hold it). */
export function logAdmission(admission: ReturnType<typeof admitTools>, policy: AdmissionPolicy, logger: Logger): void {
  const { reads, writable, refused, unscoped } = admission;
  if (refused.length > 0) logger.debug('mcp-tool-refused', { count: refused.length, names: refused.slice(0, 20) });
  // Default-deny: a read of customer data that names no scoped argument could return anyone's.
  if (unscoped.length > 0) {
    logger.warn('mcp-tool-unscoped', {
      count: unscoped.length,
      names: unscoped.slice(0, 20),
      publicCategories: [...policy.publicCategories],
      fix: `declare _meta.${SCOPE_ARGUMENTS_META_KEY} on the tool or map it in MCP_SCOPE_ARGUMENTS`,
    });
  }
  logger.info('mcp-tools-listed', { admitted: reads.size, writes: writable.size, refused: refused.length, unscoped: unscoped.length });
}
