/**
 * How a question's choices read as text: the numbered lines every channel sends (a channel that
 * shows buttons may leave them out), so a typed "1" or the option's name answers as a tap does.
 */
import type { Choice } from './tool.js';

export function choiceLines(choices: readonly Choice[]): string {
  return choices.map((choice, index) => `${index + 1}. ${choice.label}`).join('\n');
}

/** `text` without the trailing numbered lines `choiceLines` wrote for `choices` (for a channel showing them as buttons). */
export function withoutChoiceLines(text: string, choices: readonly Choice[]): string {
  const lines = choiceLines(choices);
  const at = text.lastIndexOf(lines);
  if (at < 0) return text;
  const before = text.slice(0, at).trimEnd();
  const after = text.slice(at + lines.length).trimStart();
  return before && after ? `${before}\n${after}` : before || after;
}

/**
 * `text` as a channel that showed its choices as buttons sent it (its last block of numbered
 * lines "1. …", "2. …" left out), or undefined when it lists none: how a stored reply is found
 * again among what the channel sent.
 */
export function withoutListedChoices(text: string): string | undefined {
  const blocks = [...text.matchAll(/^1\. .*(?:\n\d+\. .*)*/gm)];
  const block = blocks.at(-1)?.[0];
  if (block === undefined) return undefined;
  const labels = block.split('\n').map((line, index) => (line.startsWith(`${index + 1}. `) ? line.slice(`${index + 1}. `.length) : undefined));
  if (labels.some((label) => label === undefined)) return undefined;
  return withoutChoiceLines(
    text,
    labels.map((label) => ({ id: '', label: label ?? '' })),
  );
}
