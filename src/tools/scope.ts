/**
 * Binds a tool call to the verified caller: which reads a caller may be offered, and the
 * arguments a scoped read is called with (or a write proposed with). The model chooses among
 * what the caller may see; it never names whose data a call reads or changes — the runtime fills
 * those arguments itself.
 *
 * Must never let a model-written value reach a scoped argument: a value that differs from the
 * caller's own is refused, not corrected, so the attempt is visible (logged and counted). A
 * write's refusal (its access names an effect) speaks of a change, a read's of a read.
 */
import { AppError } from '../errors/index.js';
import type { AssistantTool, Caller, ScopeBinding, ToolAccess } from '../contracts/tool.js';

/** Key of the request `_meta` that carries the verified caller to the MCP server on every call. */
const CALLER_META_KEY = 'wa-assistant/caller';

/**
 * Why a call was refused. `not-selected` is ordinary sequencing (the contact holds several
 * entities and none is chosen yet); every other reason is an attempt to read past the caller's
 * scope.
 */
export type ScopeDenial = 'unoffered-tool' | 'scoped-argument' | 'entity-not-held' | 'no-identity' | 'not-selected';

/** A tool call the caller's scope does not allow; its message is what the model is told. */
export class ToolScopeError extends AppError {
  constructor(
    readonly toolName: string,
    readonly reason: ScopeDenial,
    message: string,
  ) {
    super(message);
  }
}

/** The caller's scope as the MCP server receives it in the request's `_meta`. */
export function callerMeta(caller: Caller): Record<string, unknown> {
  if (caller.kind === 'anonymous') return { [CALLER_META_KEY]: { verified: false } };
  return {
    [CALLER_META_KEY]: {
      verified: true,
      ...(caller.customerId ? { customerId: caller.customerId } : {}),
      ...(caller.entity ? { entityId: caller.entity.id } : {}),
    },
  };
}

/** True when the tool can be bound to this caller (so it may be offered). Channel tools always can. */
export function callerMayUse(tool: Pick<AssistantTool, 'access'>, caller: Caller): boolean {
  const access = tool.access;
  if (!access || access.kind === 'public') return true;
  if (caller.kind === 'anonymous') return false;
  const bindings = Object.values(access.arguments);
  if (bindings.includes('customer') && !caller.customerId) return false;
  if (bindings.includes('entity') && caller.entities.length === 0) return false;
  return true;
}

/** A write (its access names an effect) is refused in words that fit a change, a read in words that fit a read. */
const changes = (access: ToolAccess): boolean => access.kind === 'caller' && access.effect !== undefined;

/** The model wrote a value for a scoped argument that is not the caller's own. */
function refusedValue(toolName: string, binding: ScopeBinding, written: unknown, caller: Extract<Caller, { kind: 'contact' }>, write: boolean): ToolScopeError {
  const [verb, entityVerb, outcome] = write ? ['change', 'acts on', 'not proposed'] : ['read', 'reads', 'not called'];
  if (binding === 'entity' && caller.entities.some((entity) => entity.id === written)) {
    return new ToolScopeError(
      toolName,
      'scoped-argument',
      `${toolName} ${entityVerb} the selected company only; call select_entity to switch. It was ${outcome}.`,
    );
  }
  return new ToolScopeError(
    toolName,
    binding === 'entity' ? 'entity-not-held' : 'scoped-argument',
    `${toolName} can only ${verb} this customer's own records; it was ${outcome}.`,
  );
}

/** The caller has nothing to bind the argument to. */
function unbound(toolName: string, binding: ScopeBinding, caller: Extract<Caller, { kind: 'contact' }>): ToolScopeError {
  if (binding === 'customer') {
    return new ToolScopeError(toolName, 'no-identity', `${toolName} needs a customer account, and this customer has none on record. Do not guess one.`);
  }
  if (caller.entities.length > 1) {
    return new ToolScopeError(toolName, 'not-selected', `${toolName} needs to know which company this is about: call select_entity first.`);
  }
  return new ToolScopeError(toolName, 'no-identity', `${toolName} needs a company, and this customer is linked to none.`);
}

/**
 * The arguments to call a tool with for this caller: the model's own arguments (only those its
 * schema declares, for a scoped tool) with every scoped argument set to the caller's value.
 * Throws ToolScopeError when the caller may not call it or the model tried to name someone else.
 */
export function bindArguments(
  toolName: string,
  access: ToolAccess,
  declared: ReadonlySet<string> | undefined,
  input: Readonly<Record<string, unknown>>,
  caller: Caller,
): Record<string, unknown> {
  if (access.kind === 'public') return { ...input };
  if (caller.kind === 'anonymous') {
    const does = changes(access) ? 'changes' : 'reads';
    throw new ToolScopeError(toolName, 'no-identity', `${toolName} ${does} a customer's own records, and this customer is not identified.`);
  }
  const bound: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(input)) {
    if (!Object.hasOwn(access.arguments, name) && (!declared || declared.has(name))) bound[name] = value;
  }
  for (const [name, binding] of Object.entries(access.arguments)) {
    const value = binding === 'customer' ? caller.customerId : caller.entity?.id;
    const written = Object.hasOwn(input, name) ? input[name] : undefined;
    if (written !== undefined && written !== value) throw refusedValue(toolName, binding, written, caller, changes(access));
    if (value === undefined) throw unbound(toolName, binding, caller);
    bound[name] = value;
  }
  return bound;
}
