/**
 * Server-authoritative history: the transcript's recent messages as model messages, bounded in
 * count and characters so a long conversation never grows the prompt without limit; what the
 * history keeps for the customer only (`offModel`: ratings, an outage's messages) is left out.
 */
import type { ModelMessage } from 'ai';

const HISTORY_CHAR_LIMIT = 12_000;

export interface TranscriptLine {
  direction: 'inbound' | 'outbound';
  text: string;
  /** Kept for the customer's history only (a rating, an outage's messages): never the model's. */
  offModel?: string | undefined;
}

export function toModelHistory(lines: readonly TranscriptLine[]): ModelMessage[] {
  const kept: ModelMessage[] = [];
  let budget = HISTORY_CHAR_LIMIT;
  for (const line of [...lines].reverse()) {
    if (line.offModel !== undefined) continue;
    if (line.text.length > budget) break;
    budget -= line.text.length;
    kept.push({ role: line.direction === 'inbound' ? 'user' : 'assistant', content: line.text });
  }
  kept.reverse();
  // A model conversation starts with the customer; drop a leading assistant message.
  while (kept[0]?.role === 'assistant') kept.shift();
  return kept;
}

/** A message's text: its string content, or its text parts joined (images and files are never text). */
export function messageText(message: ModelMessage): string {
  if (typeof message.content === 'string') return message.content;
  return message.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
}
