/**
 * The business's guidance as the transcript page shows it under an assistant's reply: the
 * entries its prompt quoted and those the judge said applied, each by its id with its category
 * and the first words of its text when the guidance feature can name it (else the id alone).
 * This module is the port (the guidance feature answers it) and the markup; every word escaped.
 */

/** What the page shows of one entry. */
export interface PageGuidanceEntry {
  category: string;
  text: string;
}

/** Names the entries it knows among `ids` (a missing id is shown as the id alone). */
export type PageGuidance = (ids: readonly string[]) => Promise<ReadonlyMap<string, PageGuidanceEntry>>;

/** A reply's record: every entry its prompt quoted, and those that applied. */
export interface ReplyGuidance {
  entries: readonly string[];
  applied: readonly string[];
}

const FIRST_WORDS = 8;
const entities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (character) => entities[character] ?? character);

/** The entry ids every reply of the page mentions, once each. */
export const guidanceIdsOf = (replies: readonly (ReplyGuidance | undefined)[]): string[] => [
  ...new Set(replies.flatMap((guidance) => (guidance ? [...guidance.entries, ...guidance.applied] : []))),
];

function firstWords(text: string): string {
  const words = text.trim().split(/\s+/);
  return words.length > FIRST_WORDS ? `${words.slice(0, FIRST_WORDS).join(' ')}…` : words.join(' ');
}

function entryText(id: string, known: ReadonlyMap<string, PageGuidanceEntry>): string {
  const entry = known.get(id);
  return entry ? `${id} (${entry.category}): ${firstWords(entry.text)}` : id;
}

function line(label: string, ids: readonly string[], known: ReadonlyMap<string, PageGuidanceEntry>): string {
  const text = ids.length ? ids.map((id) => entryText(id, known)).join('; ') : 'none';
  return `<p class="guidance">${escapeHtml(`${label}: ${text}`)}</p>`;
}

/** The two lines under a reply (nothing when the reply recorded no guidance). */
export function renderReplyGuidance(guidance: ReplyGuidance | undefined, known: ReadonlyMap<string, PageGuidanceEntry> = new Map()): string {
  if (!guidance || (guidance.entries.length === 0 && guidance.applied.length === 0)) return '';
  return line('Guidance quoted', guidance.entries, known) + line('Guidance applied', guidance.applied, known);
}
