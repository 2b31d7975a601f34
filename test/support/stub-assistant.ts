/**
 * A scripted "model" for the OpenAI-compatible stub: answers judge calls (structured output)
 * by keyword, calls the one business tool a question needs, then answers with what the tool
 * returned. Lets tests run the real `@ai-sdk/openai` code path, tools included, end to end.
 */
import type { ChatCompletionRequestBody, StubReply } from './openai-stub.js';
import { keywordJudge, type JsonSchema } from './deterministic-model.js';

const TOOL_FOR: { pattern: RegExp; tool: string; input: (text: string) => Record<string, unknown> }[] = [
  { pattern: /invoice/i, tool: 'invoice_get', input: (text) => ({ number: text.match(/\d{3,}/)?.[0] ?? '0' }) },
  { pattern: /plan|price/i, tool: 'plan_get_pricing', input: () => ({}) },
  { pattern: /log ?in|password/i, tool: 'help_search_articles', input: () => ({ query: 'password' }) },
];

function contentText(content: ChatCompletionRequestBody['messages'][number]['content']): string {
  if (typeof content === 'string') return content;
  return (content ?? []).map((part) => ('text' in part && typeof part.text === 'string' ? part.text : '')).join('');
}

export function stubAssistant(body: ChatCompletionRequestBody): StubReply {
  const lastUser = [...body.messages].reverse().find((message) => message.role === 'user');
  const userText = contentText(lastUser?.content);
  if (body.response_format?.json_schema) {
    const reply = keywordJudge({
      tier: 'fast',
      system: '',
      userText,
      userMessages: [userText],
      files: [],
      promptText: '',
      toolNames: [],
      structured: true,
      schema: body.response_format.json_schema.schema as JsonSchema,
      toolResults: [],
      options: { prompt: [] },
    });
    return 'text' in reply ? { json: JSON.parse(reply.text) as unknown } : { text: '' };
  }
  const toolResult = [...body.messages].reverse().find((message) => message.role === 'tool');
  if (toolResult)
    return {
      text: `From our records: ${contentText(toolResult.content)
        .replace(/<\/?tool-output>/g, '')
        .trim()}`,
    };
  const offered = new Set((body.tools ?? []).map((tool) => tool.function.name));
  const needed = TOOL_FOR.find((candidate) => candidate.pattern.test(userText) && offered.has(candidate.tool));
  if (needed) return { toolCalls: [{ name: needed.tool, arguments: needed.input(userText) }] };
  return { text: `I can help with that: ${userText}` };
}
