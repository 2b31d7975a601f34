/**
 * Knowledge is data, never instructions: lines of ingested text that try to steer the assistant
 * ("ignore previous instructions", "reveal your system prompt", role directives such as
 * "system:" or "you are now…") are dropped at ingest, and the caller logs what was dropped.
 */
const STEERING: readonly RegExp[] = [
  /\b(ignore|disregard|forget|override)\b[^.\n]{0,40}\b(previous|prior|above|earlier|all|your|the)\b[^.\n]{0,20}\b(instructions?|prompts?|rules?|directions?)\b/i,
  /\b(reveal|show|print|repeat|output|leak|tell me)\b[^.\n]{0,30}\b(system|hidden|initial|secret)\s+(prompt|instructions?|message)\b/i,
  /^\s*(system|assistant|developer)\s*:/i,
  /<\/?\s*(system|assistant|instructions?|tool-output)\s*>/i,
  /\byou are (now|no longer)\b/i,
  /\b(act|behave|respond|pretend) as (if you were|an?|the)\b[^.\n]{0,40}\b(assistant|ai|model|bot|jailbroken|dan)\b/i,
  /\bnew instructions?\s*:/i,
  /\b(as an ai|language model),? (you must|always|never)\b/i,
];

function isSteering(line: string): boolean {
  return STEERING.some((pattern) => pattern.test(line));
}

/** The text without its steering lines (sentences, for long lines), and what was dropped. */
export function dropSteering(text: string): { text: string; dropped: string[] } {
  const dropped: string[] = [];
  const kept = text.split('\n').map((line) => {
    if (!isSteering(line)) return line;
    const sentences = line.split(/(?<=[.!?])\s+/);
    const clean = sentences.filter((sentence) => {
      if (!isSteering(sentence)) return true;
      dropped.push(sentence.slice(0, 200));
      return false;
    });
    if (clean.length === sentences.length) {
      // The pattern spans sentences: the whole line goes.
      dropped.push(line.slice(0, 200));
      return '';
    }
    return clean.join(' ');
  });
  return { text: kept.join('\n'), dropped };
}
