/**
 * Step 5: one model run for the routed role, with step, output-token and deadline limits.
 * Offered tools become AI SDK tools whose results are delimited and size-capped before the
 * model sees them; a call to any other name is refused (the SDK never runs it) and reported,
 * as is a call the caller's scope refuses. Failures surface as ModelCallError; the caller
 * decides what the customer gets.
 */
import {
  asSchema,
  dynamicTool,
  generateText,
  isStepCount,
  jsonSchema,
  NoSuchToolError,
  streamText,
  type LanguageModel,
  type LanguageModelUsage,
  type ModelMessage,
  type Schema,
  type ToolCallRepairFunction,
  type ToolSet,
} from 'ai';
import { errorStatus, errorText, isRetryableStatus, ModelCallError } from '../errors/index.js';
import { withDeadline } from './deadline.js';
import { MODEL_TELEMETRY } from '../model/provider.js';
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
  model: LanguageModel;
  system: string;
  messages: readonly ModelMessage[];
  tools: readonly AssistantTool[];
  toolContext: ToolCallContext;
  /** Told of every call refused for the caller's scope, or to a tool not offered this leg. */
  onScopeDenied(denial: { toolName: string; reason: ScopeDenial }): void;
  limits: ModelLimits;
  signal: AbortSignal;
  onTextDelta?: ((delta: string) => void) | undefined;
}

export interface CallModelResult {
  text: string;
  toolCalls: ToolCallRecord[];
  /** A channel tool asked the customer something: the leg ends with its question. */
  interrupt?: { toolName: string; question: string; data: unknown; choices?: readonly Choice[] };
  /** Session facts tools set during the leg. */
  session?: SessionFacts;
  /** Tokens over all the leg's steps. */
  usage: LanguageModelUsage;
}

interface LegRecorder {
  calls: ToolCallRecord[];
  interrupt?: CallModelResult['interrupt'];
  session?: SessionFacts;
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
  let context = leg.toolContext;
  for (const assistantTool of tools) {
    set[assistantTool.name] = dynamicTool({
      description: assistantTool.description,
      inputSchema: modelInputSchema(assistantTool.inputSchema),
      execute: async (input: unknown) => {
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

function classify(error: unknown): ModelCallError {
  if (error instanceof ModelCallError) return error;
  return new ModelCallError(`model call failed: ${errorText(error)}`, isRetryableStatus(errorStatus(error, 'statusCode')), { cause: error });
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
  const recorder: LegRecorder = { calls: [] };
  const tools = toToolSet(input.tools, input, recorder);
  const interrupted = () => recorder.interrupt !== undefined;
  const common = {
    model: input.model,
    system: input.system,
    messages: [...input.messages],
    tools,
    repairToolCall: refuseUnoffered(input, recorder),
    stopWhen: [isStepCount(input.limits.maxSteps), interrupted],
    maxOutputTokens: input.limits.maxOutputTokens,
    maxRetries: 1,
    telemetry: MODEL_TELEMETRY,
  };
  try {
    const finish = (text: string, usage: LanguageModelUsage): CallModelResult => ({
      text: recorder.interrupt ? recorder.interrupt.question : text.trim(),
      usage,
      toolCalls: recorder.calls,
      ...(recorder.interrupt ? { interrupt: recorder.interrupt } : {}),
      ...(recorder.session ? { session: recorder.session } : {}),
    });
    const onTextDelta = input.onTextDelta;
    return await withDeadline(input.limits.timeoutMs, input.signal, async (abortSignal) => {
      if (!onTextDelta) {
        const result = await generateText({ ...common, abortSignal });
        return finish(result.text, result.usage);
      }
      let streamError: unknown;
      const result = streamText({ ...common, abortSignal, onError: ({ error }) => (streamError = error) });
      for await (const delta of result.textStream) onTextDelta(delta);
      if (streamError) throw streamError;
      return finish(await result.text, await result.usage);
    });
  } catch (error) {
    throw classify(error);
  }
}
