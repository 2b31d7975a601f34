/**
 * What the widget shows of a question it draws with buttons (DOM-free, unit-tested in Node).
 */

/**
 * A question's text as the widget shows it above its buttons: without the numbered answers
 * ("1. Confirm", "2. Cancel") and the "Reply 1 or yes…" hint under them, which the service writes
 * for channels without buttons (and for a typed answer): the buttons say it once. Text without
 * that list is shown as it is.
 */
export function questionText(text: string, choices: readonly { label: string }[]): string {
  const lines = choices.map((choice, index) => `${index + 1}. ${choice.label}`).join('\n');
  const at = text.lastIndexOf(lines);
  if (at < 0) return text;
  const before = text.slice(0, at).trimEnd();
  const after = text.slice(at + lines.length).trim();
  // What follows the list is its hint (one short paragraph); anything more is kept.
  const rest = after.includes('\n\n') ? after : '';
  if (!before) return text;
  return rest ? `${before}\n\n${rest}` : before;
}
