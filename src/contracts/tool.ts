/**
 * The tool taxonomy shared by every origin: an MCP read from the business's server or a tool
 * a channel declares. Each tool carries a category and an effect; roles admit tools by scope,
 * never by listing them one by one.
 */
import type { z } from 'zod';

export const TOOL_EFFECTS = ['read', 'reversible', 'irreversible', 'gesture', 'human_only'] as const;
export type ToolEffect = (typeof TOOL_EFFECTS)[number];
export type ToolOrigin = 'mcp' | 'channel';

export type SessionFacts = Record<string, string | number | boolean | null>;

interface CallerEntity {
  id: string;
  name: string;
}

/**
 * Who is talking, as the service verified it (built by `callerFor` in caller.ts). `anonymous`:
 * nobody verified; `contact`: a linked contact, with the entity this conversation is about.
 */
export type Caller =
  | { kind: 'anonymous' }
  | {
      kind: 'contact';
      name: string;
      email?: string | undefined;
      /** The business's own id for this customer, bound into customer-scoped calls. */
      customerId?: string | undefined;
      entities: readonly CallerEntity[];
      /** The selected entity, or the only one the contact holds. */
      entity?: CallerEntity | undefined;
    };

/** What a tool's execute function gets besides its input. */
export interface ToolCallContext {
  conversationId: string;
  runId: string;
  roleId: string;
  channelId: string;
  /** The customer as the channel knows them (address, display name). */
  customer: { address: string; displayName?: string };
  /** Who the service verified is talking; scoped tool calls are bound to it, never to the model's arguments. */
  caller: Caller;
  /** The customer's message this leg answers. */
  latestMessage: string;
  /** The routed role's facts as this leg started. */
  facts: Readonly<Record<string, string | number | boolean | null>>;
  /** Session facts channel tools set earlier (e.g. the selected entity). */
  session: Readonly<SessionFacts>;
  /** Channel-reported details of the message being answered (profile name, page URL…). */
  metadata: Readonly<Record<string, string>>;
  /**
   * When the message being answered arrived (ms since the epoch): an answer is in time by when it
   * arrived, not by when its turn runs (a burst's quiet period, a customer typing). Absent: now.
   */
  receivedAt?: number;
  signal: AbortSignal;
  /**
   * Where the leg's reply goes out: the service's own words for the customer, sent with that
   * reply (after the model's text, once, even if the model writes them too) whatever the model
   * does — words the service promises (a closed team's opening). Absent where no reply follows
   * the call: the tool then leaves the words to the model.
   */
  sayToCustomer?: (words: string) => void;
}

/**
 * Returned by a channel tool's `execute` to ask the customer something and end the leg; the
 * customer's next message resumes it through `resume` (a continuation leg, no re-judging).
 */
export class ToolInterrupt {
  constructor(
    readonly question: string,
    readonly data: unknown,
    /** Answers the customer may tap instead of typing (the question's text lists them too). */
    readonly choices?: readonly Choice[],
    /** When the question stops taking an answer (ms since the epoch), if sooner than the pending question's own expiry. */
    readonly expiresAt?: number,
    /**
     * The language the question is written in (ISO 639-1): the service's own words around it
     * follow it (a WhatsApp list's button, the reply to an answer that comes after it expired).
     */
    readonly language?: string,
  ) {}
}

/**
 * One answer to a question, shown as a button or list row where the channel can. `id` comes
 * back with a tap (WhatsApp `ButtonPayload`/`ListId`, the widget's `choice`); it names the
 * question it answers, so a tap on an older question is told apart from one on the current.
 */
export interface Choice {
  id: string;
  /** What the button says (WhatsApp: at most 20 characters on a quick reply, 24 on a list row). */
  label: string;
}

/** Returned by a tool's `execute` to also set session facts (e.g. the entity it selected). */
export class WithSession {
  constructor(
    readonly output: unknown,
    readonly session: SessionFacts,
  ) {}
}

/**
 * How a tool's `resume` answers: a result the model continues from, the question asked again,
 * `fresh` (the answer was no answer: the pending question is dropped and the message is a new
 * turn), or `reply` (a fixed answer the service gives without the model, e.g. an expired
 * confirmation). A resume must be idempotent: a retried batch resumes the same answer again
 * (the question stays pending, marked answered by that batch, until a later message).
 */
export type ResumeOutcome =
  | {
      output: unknown;
      session?: SessionFacts;
      /**
       * The service's own words for this result, in the question's language: what the customer
       * gets when the model can't phrase it (a change that ran is never left untold, or run again).
       */
      said?: string;
    }
  | { askAgain: ToolInterrupt }
  | { fresh: true }
  | { reply: string };

/** What a runtime-bound argument is filled with: the caller's customer id, or the selected entity's id. */
export type ScopeBinding = 'customer' | 'entity';

/**
 * Whose data an MCP tool reads or changes. `public`: anyone's to see (a public category, no
 * scoped argument). `caller`: the verified caller's own; `arguments` names the arguments the
 * runtime fills (hidden from the model's schema); `effect` is a write's (absent: a read), so a
 * refusal speaks of a change, not a read.
 */
export type ToolAccess = { kind: 'public' } | { kind: 'caller'; arguments: Readonly<Record<string, ScopeBinding>>; effect?: Exclude<ToolEffect, 'read'> };

/** One tool as the orchestrator sees it, whatever its origin. */
export interface AssistantTool {
  name: string;
  description: string;
  origin: ToolOrigin;
  category: string;
  effect: ToolEffect;
  /** MCP reads: whose data the tool returns. Channel tools have none (they act on the conversation). */
  access?: ToolAccess;
  /** zod schema of the arguments, or a JSON schema for MCP tools. */
  inputSchema: z.ZodType | { jsonSchema: Record<string, unknown> };
  execute(input: unknown, context: ToolCallContext): Promise<unknown>;
  /** Resolves this tool's pending question with the customer's answer. */
  resume?(answer: string, data: unknown, context: ToolCallContext): Promise<ResumeOutcome>;
}

/**
 * Which tools a role may be offered. `effects` is required: an empty list admits nothing but
 * `include`. `categories` absent means any category. `include` admits by name whatever the
 * category and effect; `exclude` wins over everything.
 */
export interface ToolScope<Name extends string = string> {
  effects: readonly ToolEffect[];
  categories?: readonly string[];
  include?: readonly Name[];
  exclude?: readonly Name[];
}

export function toolIsInScope(tool: Pick<AssistantTool, 'name' | 'category' | 'effect'>, scope: ToolScope): boolean {
  if (scope.exclude?.includes(tool.name)) return false;
  if (scope.include?.includes(tool.name)) return true;
  if (!scope.effects.includes(tool.effect)) return false;
  return scope.categories === undefined || scope.categories.includes(tool.category);
}

/** A contact the service verified, as a channel's `identify` returns it. */
export interface LinkedCustomer {
  name: string;
  email?: string | undefined;
  /** The business's own id for this customer, bound into scoped tool calls. */
  customerId?: string | undefined;
  entities: readonly { id: string; name: string }[];
}

export interface ContactReader {
  get(address: string): Promise<LinkedCustomer | undefined>;
}
