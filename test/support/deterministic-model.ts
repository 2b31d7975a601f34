/**
 * A deterministic language model for tests and the benchmark. It lives under test/ and is
 * handed to `createServices` in code: no configuration can select it in production.
 * A script decides each call's answer from the prompt, so tests read like conversations.
 */
import type { LanguageModelV4CallOptions, LanguageModelV4Content, LanguageModelV4GenerateResult, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { MockLanguageModelV4 } from 'ai/test';
import type { ModelProvider, ModelTier } from '../../src/model/provider.js';

export interface ScriptedCall {
  tier: ModelTier;
  system: string;
  /** The last user message's text. */
  userText: string;
  /** Every user message's text, in order (history, fenced customer context, the latest message). */
  userMessages: string[];
  /** The image and file parts of the last user message (photos, PDFs), as the model received them. */
  files: ReceivedFile[];
  /** Everything the call hands the model (system, messages, tool calls and results), as one string. */
  promptText: string;
  toolNames: string[];
  /** True when the call asks for structured (JSON) output. */
  structured: boolean;
  /** The JSON schema a structured call must answer with. */
  schema: JsonSchema | undefined;
  /** Tool results already returned in this run (for multi-step scripts). */
  toolResults: { toolName: string; output: unknown }[];
  options: LanguageModelV4CallOptions;
}

/** An image or file part that reached the model: its type, size, name and bytes. */
export interface ReceivedFile {
  mediaType: string;
  size: number;
  filename: string | undefined;
  bytes: Uint8Array | undefined;
}

export type ScriptedReply =
  { text: string; delayMs?: number } | { toolCalls: { name: string; input: Record<string, unknown> }[]; delayMs?: number } | { error: Error; delayMs?: number };

export type Script = (call: ScriptedCall) => ScriptedReply | Promise<ScriptedReply>;

export interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  properties?: Record<string, JsonSchema>;
  anyOf?: JsonSchema[];
  items?: JsonSchema;
}

/** A value that satisfies `schema`: nulls where allowed, first enum values, empty arrays. */
export function schemaDefault(schema: JsonSchema | undefined): unknown {
  if (!schema) return null;
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  if (types.includes('null') || schema.anyOf?.some((option) => option.type === 'null')) return null;
  if (schema.enum?.length) return schema.enum[0];
  if (schema.anyOf?.length) return schemaDefault(schema.anyOf[0]);
  switch (types[0]) {
    case 'object':
      return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([key, value]) => [key, schemaDefault(value)]));
    case 'array':
      return [];
    case 'boolean':
      return true;
    case 'number':
    case 'integer':
      return 0;
    default:
      return '';
  }
}

/** A judge that routes every turn to `roleId`, in scope (a suite about one role's tools). */
export function judgeRoutingTo(roleId: string): Script {
  return (call) => {
    const json = schemaDefault(call.schema) as Record<string, unknown>;
    if ('route' in json) json.route = roleId;
    if ('inScope' in json) json.inScope = true;
    return { text: JSON.stringify(json) };
  };
}

/** Words that send a turn to a role, as a real judge would: test-only routing by keyword. */
const ROUTES: { pattern: RegExp; route: string }[] = [
  { pattern: /invoice|factura|payment|paid|refund|receipt|balance/i, route: 'bookkeeper' },
  { pattern: /plan|price|pricing|cost|demo|upgrade|buy|quote/i, route: 'sales' },
  { pattern: /log ?in|password|error|bug|crash|broken|help|how do i/i, route: 'support' },
];

/**
 * The default judge: routes by keyword, marks weather/sports small talk out of scope, reads words
 * after a rating as a comment unless they ask or want something, answers every other field with
 * the schema's default. Tests override it to simulate failures.
 */
export const keywordJudge: Script = (call) => {
  const json = schemaDefault(call.schema) as Record<string, unknown>;
  const routes = (call.schema?.properties?.route?.enum ?? []) as string[];
  const latest =
    call.userText
      .split('\n')
      .filter((line) => line.startsWith('Customer: '))
      .at(-1) ?? call.userText;
  const match = ROUTES.find((candidate) => candidate.pattern.test(latest) && routes.includes(candidate.route));
  if (match) json.route = match.route;
  if ('inScope' in json) json.inScope = !/weather|football|lottery/i.test(latest);
  // Words after a rating: a comment unless they ask or want something.
  if ('feedbackOnly' in json) json.feedbackOnly = !/\?|person|want|need|can you/i.test(latest);
  return { text: JSON.stringify(json) };
};

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 10, text: 10, reasoning: 0 },
};

function describeCall(tier: ModelTier, options: LanguageModelV4CallOptions): ScriptedCall {
  let system = '';
  let userText = '';
  const userMessages: string[] = [];
  let files: ReceivedFile[] = [];
  const toolResults: ScriptedCall['toolResults'] = [];
  for (const message of options.prompt) {
    if (message.role === 'system') system += message.content;
    if (message.role === 'user') {
      userText = message.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
      userMessages.push(userText);
      files = message.content.flatMap((part) => {
        if (part.type !== 'file') return [];
        const bytes = part.data.type === 'data' ? (typeof part.data.data === 'string' ? Buffer.from(part.data.data, 'base64') : part.data.data) : undefined;
        return [{ mediaType: part.mediaType, size: bytes?.byteLength ?? 0, filename: part.filename, bytes }];
      });
    }
    if (message.role === 'tool') {
      for (const part of message.content) {
        if (part.type === 'tool-result') toolResults.push({ toolName: part.toolName, output: part.output });
      }
    }
  }
  let promptText: string | undefined;
  return {
    tier,
    system,
    userText,
    userMessages,
    files,
    // Built when a test reads it (the bench never does: a few KB of JSON per call is CPU the service would not spend).
    // Bytes of image and file parts show as their length, never as the bytes.
    get promptText() {
      promptText ??= JSON.stringify(options.prompt, (_key, value: unknown) => (value instanceof Uint8Array ? `[${value.byteLength} bytes]` : value));
      return promptText;
    },
    toolNames: (options.tools ?? []).map((tool) => tool.name),
    structured: options.responseFormat?.type === 'json',
    schema: options.responseFormat?.type === 'json' ? (options.responseFormat.schema as JsonSchema | undefined) : undefined,
    toolResults,
    options,
  };
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    });
  });
}

let callCounter = 0;

function contentFor(reply: Exclude<ScriptedReply, { error: Error }>): LanguageModelV4Content[] {
  if ('text' in reply) return [{ type: 'text', text: reply.text }];
  return reply.toolCalls.map((call) => ({
    type: 'tool-call',
    toolCallId: `call_${++callCounter}`,
    toolName: call.name,
    input: JSON.stringify(call.input),
  }));
}

export interface DeterministicModels extends ModelProvider {
  /** The tier's one model (each tier's list holds one entry; vision: the smart model). */
  model(tier: ModelTier): MockLanguageModelV4;
  /** Every call made, in order (structured judge calls included). */
  readonly calls: ScriptedCall[];
  /** Sets how reply (free-text) calls are answered. */
  setScript(script: Script): void;
  /** Sets how structured (judge, route fallback, fact extraction) calls are answered. */
  setJudge(script: Script): void;
  /** Reply calls only. */
  replyCalls(): ScriptedCall[];
}

export function createDeterministicModels(
  initial: Script = () => ({ text: 'Hello from the assistant.' }),
  initialJudge: Script = keywordJudge,
): DeterministicModels {
  let script = initial;
  let judge = initialJudge;
  const calls: ScriptedCall[] = [];

  const answer = async (tier: ModelTier, options: LanguageModelV4CallOptions) => {
    const call = describeCall(tier, options);
    calls.push(call);
    const reply = await (call.structured ? judge(call) : script(call));
    if (reply.delayMs) await sleep(reply.delayMs, options.abortSignal);
    if ('error' in reply) throw reply.error;
    return reply;
  };

  const build = (tier: ModelTier) =>
    new MockLanguageModelV4({
      provider: 'deterministic',
      modelId: `deterministic-${tier}`,
      doGenerate: async (options): Promise<LanguageModelV4GenerateResult> => {
        const reply = await answer(tier, options);
        return {
          content: contentFor(reply),
          finishReason: { unified: 'text' in reply ? 'stop' : 'tool-calls', raw: undefined },
          usage,
          warnings: [],
        };
      },
      doStream: async (options) => {
        const reply = await answer(tier, options);
        const parts: LanguageModelV4StreamPart[] = [{ type: 'stream-start', warnings: [] }];
        if ('text' in reply) {
          parts.push({ type: 'text-start', id: 't0' });
          for (const word of reply.text.match(/\S+\s*/g) ?? []) parts.push({ type: 'text-delta', id: 't0', delta: word });
          parts.push({ type: 'text-end', id: 't0' });
        } else {
          for (const content of contentFor(reply)) if (content.type === 'tool-call') parts.push(content);
        }
        parts.push({ type: 'finish', finishReason: { unified: 'text' in reply ? 'stop' : 'tool-calls', raw: undefined }, usage });
        return {
          stream: new ReadableStream<LanguageModelV4StreamPart>({
            start(controller) {
              for (const part of parts) controller.enqueue(part);
              controller.close();
            },
          }),
        };
      },
    });

  const models = { fast: build('fast'), smart: build('smart') };
  const entries = {
    fast: [{ provider: 'deterministic', label: 'deterministic-fast', model: models.fast, acceptsFiles: true }],
    smart: [{ provider: 'deterministic', label: 'deterministic-smart', model: models.smart, acceptsFiles: true }],
  };
  return {
    calls,
    model: (tier) => models[tier],
    entries: (chain) => entries[chain === 'vision' ? 'smart' : chain],
    setScript(next) {
      script = next;
    },
    setJudge(next) {
      judge = next;
    },
    replyCalls: () => calls.filter((call) => !call.structured),
  };
}
