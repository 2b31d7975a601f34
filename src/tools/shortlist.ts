/**
 * A bounded, model-free shortlist of tool candidates for the judge to rank: tools whose name
 * and description share the most words with the conversation's latest messages. Keeps the
 * judge's prompt the same size whether the catalogue holds 20 tools or 2,000.
 */
import type { AssistantTool } from '../contracts/tool.js';

const SHORTLIST_SIZE = 30;

const STOP_WORDS = new Set([
  'the',
  'and',
  'for',
  'with',
  'you',
  'your',
  'can',
  'how',
  'what',
  'where',
  'this',
  'that',
  'from',
  'get',
  'list',
  'por',
  'que',
  'los',
  'las',
  'una',
  'del',
]);

function words(text: string): Set<string> {
  const found = new Set<string>();
  for (const word of text.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (word.length < 3 || STOP_WORDS.has(word)) continue;
    found.add(word);
    if (word.endsWith('s') && word.length > 4) found.add(word.slice(0, -1));
  }
  return found;
}

export function shortlistTools(tools: readonly AssistantTool[], text: string, size = SHORTLIST_SIZE): AssistantTool[] {
  if (tools.length <= size) return [...tools];
  const wanted = words(text);
  const scored = tools.map((tool, index) => {
    let score = 0;
    for (const word of words(`${tool.name.replace(/_/g, ' ')} ${tool.description}`)) if (wanted.has(word)) score += 1;
    return { tool, index, score };
  });
  scored.sort((a, b) => b.score - a.score || a.index - b.index);
  return scored.slice(0, size).map((entry) => entry.tool);
}
