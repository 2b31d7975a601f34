/**
 * Step 1 of every leg: what the channel reports about the customer's situation, as a few
 * sentences for the system prompt, capped across all sources so a channel can't flood it.
 */
import type { GroundingSource } from './contracts.js';

export const GROUNDING_CHAR_CAP = 4000;

export function groundingSentence(sources: readonly GroundingSource[]): string {
  let remaining = GROUNDING_CHAR_CAP;
  const lines: string[] = [];
  for (const source of sources) {
    const text = source.text.replace(/\s+/g, ' ').trim();
    if (!text || remaining <= 0) continue;
    const line = `${source.label}: ${text}`.slice(0, remaining);
    lines.push(line);
    remaining -= line.length + 1;
  }
  return lines.join('\n');
}
