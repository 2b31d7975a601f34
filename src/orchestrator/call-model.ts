/**
 * Step 5: one model run for the routed role, with step, output-token and deadline limits.
 * Offered tools become AI SDK tools whose results are delimited and size-capped before the
 * model sees them; a call to any other name is refused (the SDK never runs it) and reported,
 * as is a call the caller's scope refuses. The leg goes along the tier's list (`withFailover`):
 * each attempt records its own tool calls, and a streamed leg moves to the next entry only before
 * its first chunk went out. Failures surface as ModelCallError (a list that ran out: retryable);
 * the caller decides what the customer gets. A failed attempt's tools may have run: the next
 * entry runs the leg again, as a retried turn would.
 */
import {
  asSchema,
  dynamicTool,
  generateText,
  isStepCount,
  jsonSchema,
  NoSuchToolError,
  streamText,
  type LanguageModelUsage,
  type ModelMessage,
  type Schema,
  type ToolCallRepairFunction,
  type ToolSet,
} from 'ai';
import { errorText } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { ProviderBreakers } from '../model/provider-breaker.js';
import { MODEL_TELEMETRY, type ModelEntry, type ModelTier } from '../model/provider.js';
import { withFailover } from './failover.js';
import type { ModelCallObserver } from './metering.js';
import type { ModelOutages } from './model-outages.js';
import { reselect } from '../tools/caller.js';
import { ToolScopeError, type ScopeDenial } from '../tools/scope.js';
import { ToolInterrupt, WithSession, type AssistantTool, type Choice, type SessionFacts, type ToolCallContext } from '../contracts/tool.js';
import type { ToolCallRecord } from '../contracts/index.js';

export const TOOL_OUTPUT_CHAR_CAP = 8000;

export interface ModelLimits {
  maxSteps: number;
  maxOutputTokens: number;
  timeoutMs: number;
}

export interface CallModelInput {
  tier: ModelTier;
  /** The tier's list, in priority order: a retryable failure moves the leg to the next entry. */
  entries: readonly ModelEntry[];
  breakers: ProviderBreakers | undefined;
  outages?: ModelOutages | undefined;
  /** The turn's meter: told of every attempt. */
  observer: ModelCallObserver | undefined;
  logger: Logger;
  metrics: Metrics;
  system: string;
  messages: readonly ModelMessage[];
  /** The messages for an entry that takes no files (photos described in text); the same messages when absent. */
  textOnlyMessages?: () => Promise<readonly ModelMessage[]>;
  tools: readonly AssistantTool[];
  toolContext: ToolCallContext;
  /** Told of every call refused for the caller's scope, or to a tool not offered this leg. */
  onScopeDenied(denial: { toolName: string; reason: ScopeDenial }): void;
  limits: ModelLimits;
  signal: AbortSignal;
  onTextDelta?: ((delta: string) => void) | undefined;
  /** Awaited before each tool runs (see `TurnInput.beforeAction`). */
  beforeAction?: (() => Promise<void>) | undefined;
}

export interface CallModelResult {
  text: string;
  toolCalls: ToolCallRecord[];
  /** A channel tool asked the customer something: the leg ends with its question. */
  interrupt?: { toolName: string; question: string; data: unknown; choices?: readonly Choice[]; expiresAt?: number; language?: string };
  /** Session facts tools set during the leg. */
  session?: SessionFacts;
  /** The service's own words tools asked to go out with the reply (`ToolCallContext.sayToCustomer`), once each. */
  serviceWords?: readonly string[];
  /** Tokens over all the leg's steps. */
  usage: LanguageModelUsage;
  /** The entry that answered. */
  entry: ModelEntry;
}

interface LegRecorder {
  calls: ToolCallRecord[];
  interrupt?: CallModelResult['interrupt'];
  session?: SessionFacts;
  serviceWords?: string[];
}

/** Wraps a tool result as untrusted, size-capped text. */
export function fenceToolOutput(output: unknown): string {
  const text = typeof output === 'string' ? output : JSON.stringify(output);
  const capped = text.length > TOOL_OUTPUT_CHAR_CAP ? `${text.slice(0, TOOL_OUTPUT_CHAR_CAP)}… [truncated]` : text;
  return `<tool-output>\n${capped.replaceAll('</tool-output>', '</ tool-output>')}\n</tool-output>`;
}

/**
 * Each tool's input schema as the AI SDK takes it, built once per schema: the SDK converts a zod
 * schema to JSON Schema whenever it is handed one anew, and a tool's schema never changes.
 */
const modelInputSchemas = new WeakMap<AssistantTool['inputSchema'], Schema>();

function modelInputSchema(schema: AssistantTool['inputSchema']): Schema {
  let built = modelInputSchemas.get(schema);
  if (!built) {
    built = 'jsonSchema' in schema ? jsonSchema(schema.jsonSchema) : asSchema(schema);
    modelInputSchemas.set(schema, built);
  }
  return built;
}

function toToolSet(tools: readonly AssistantTool[], leg: CallModelInput, recorder: LegRecorder): ToolSet {
  const set: ToolSet = {};
  // A tool that sets session facts (select_entity) rebinds the caller for the rest of the leg.
  let context: ToolCallContext = {
    ...leg.toolContext,
    sayToCustomer: (words) => {
      if (!recorder.serviceWords?.includes(words)) recorder.serviceWords = [...(recorder.serviceWords ?? []), words];
    },
  };
  for (const assistantTool of tools) {
    set[assistantTool.name] = dynamicTool({
      description: assistantTool.description,
      inputSchema: modelInputSchema(assistantTool.inputSchema),
      execute: async (input: unknown) => {
        // A turn started over before this runs never runs it (the throw is no tool result the customer sees: the call is aborted).
        await leg.beforeAction?.();
        try {
          let output = await assistantTool.execute(input, context);
          if (output instanceof WithSession) {
            recorder.session = { ...recorder.session, ...output.session };
            const session = { ...context.session, ...output.session };
            context = { ...context, session, caller: reselect(context.caller, session) };
            output = output.output;
          }
          if (output instanceof ToolInterrupt) {
            recorder.interrupt = {
              toolName: assistantTool.name,
              question: output.question,
              data: output.data,
              ...(output.choices?.length ? { choices: output.choices } : {}),
              ...(output.expiresAt !== undefined ? { expiresAt: output.expiresAt } : {}),
              ...(output.language !== undefined ? { language: output.language } : {}),
            };
            recorder.calls.push({ toolName: assistantTool.name, input, output: { asked: output.question }, isError: false });
            return fenceToolOutput({ status: 'asked the customer; waiting for their answer' });
          }
          recorder.calls.push({ toolName: assistantTool.name, input, output, isError: false });
          return fenceToolOutput(output);
        } catch (error) {
          if (error instanceof ToolScopeError) leg.onScopeDenied({ toolName: assistantTool.name, reason: error.reason });
          const message = errorText(error);
          recorder.calls.push({ toolName: assistantTool.name, input, output: message, isError: true });
          return fenceToolOutput({ error: message });
        }
      },
    });
  }
  return set;
}

/**
 * Never repairs: a call to a name this leg did not offer (an unknown tool, or one the caller
 * may not use) is recorded and reported, and the SDK answers the model with an error result.
 */
function refuseUnoffered(input: CallModelInput, recorder: LegRecorder): ToolCallRepairFunction<ToolSet> {
  return async ({ toolCall, error }) => {
    if (NoSuchToolError.isInstance(error)) {
      input.onScopeDenied({ toolName: toolCall.toolName, reason: 'unoffered-tool' });
      recorder.calls.push({ toolName: toolCall.toolName, input: toolCall.input, output: 'tool not offered; not called', isError: true });
    }
    return null;
  };
}

export async function callModel(input: CallModelInput): Promise<CallModelResult> {
  let recorder: LegRecorder = { calls: [] };
  const interrupted = () => recorder.interrupt !== undefined;
  const onTextDelta = input.onTextDelta;
  /** A streamed chunk went out: from then on a failure can't move to another entry. */
  let streamed = false;
  const result = await withFailover(
    {
      chain: input.tier,
      entries: input.entries,
      breakers: input.breakers,
      outages: input.outages,
      timeoutMs: input.limits.timeoutMs,
      signal: input.signal,
      purpose: 'reply',
      observer: input.observer,
      logger: input.logger,
      metrics: input.metrics,
    },
    async ({ entry, signal: abortSignal, last }) => {
      // Each attempt records its own leg: a failed entry's tool calls are not the answer's.
      recorder = { calls: [] };
      const messages = entry.acceptsFiles || !input.textOnlyMessages ? input.messages : await input.textOnlyMessages();
      const common = {
        model: entry.model,
        system: input.system,
        messages: [...messages],
        tools: toToolSet(input.tools, input, recorder),
        repairToolCall: refuseUnoffered(input, recorder),
        stopWhen: [isStepCount(input.limits.maxSteps), interrupted],
        maxOutputTokens: input.limits.maxOutputTokens,
        // The SDK's own retry only on the list's last entry: before it, the next entry is the retry.
        maxRetries: last ? 1 : 0,
        abortSignal,
        telemetry: MODEL_TELEMETRY,
      };
      if (!onTextDelta) {
        const answer = await generateText(common);
        return { text: answer.text, usage: answer.usage, requests: answer.steps.length };
      }
      let streamError: unknown;
      const answer = streamText({ ...common, onError: ({ error }) => (streamError = error) });
      for await (const delta of answer.textStream) {
        streamed = true;
        onTextDelta(delta);
      }
      if (streamError) throw streamError;
      return { text: await answer.text, usage: await answer.usage, requests: (await answer.steps).length };
    },
    () => !streamed,
  );
  return {
    text: recorder.interrupt ? recorder.interrupt.question : result.text.trim(),
    usage: result.usage,
    entry: result.entry,
    toolCalls: recorder.calls,
    ...(recorder.interrupt ? { interrupt: recorder.interrupt } : {}),
    ...(recorder.session ? { session: recorder.session } : {}),
    ...(recorder.serviceWords ? { serviceWords: recorder.serviceWords } : {}),
  };
}
