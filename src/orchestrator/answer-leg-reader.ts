/**
 * The reply model as the reader of the business's passages, in the same call as the reply: it
 * begins its reply with one machine-readable line, `[sources: 1, 3]` (the numbered passages its
 * answer uses) or `[sources: none]` (they do not answer the question). The service reads and
 * strips that line — from the streamed deltas too, before anything reaches the customer — then
 * writes the reply's end itself: the "Source:" line from the cited passages, or, for `none`, its
 * own "I don't have that information" in the customer's language with the offer of a person
 * (the model's text is dropped). A reply without the line is the model's as written.
 */
import type { Language } from '../words/language.js';
import { knowledgeMissingReply, sourcesLine, type CitedSource } from '../words/knowledge-words.js';

/** At most this many passages are named on the "Source:" line. */
const MAX_CITED = 2;

/** The verdict: `[sources: 1, 3]`, `[sources: none]` (`source`, any case, spaces inside). */
const VERDICT = /\[\s*sources?\s*:\s*([^\]\n]{0,60})\]/gi;
/** A verdict whole, from its opening bracket (while the reply streams). */
const VERDICT_WHOLE = new RegExp(`^${VERDICT.source}$`, 'i');
/** What a held opening bracket may still grow into a verdict. */
const VERDICT_OPEN = /^\[\s*(?:s(?:o(?:u(?:r(?:c(?:e(?:s)?)?)?)?)?)?)?(?:\s*:[^\]\n]{0,60})?$/i;
const NONE = /^\s*none\s*$/i;
const NUMBERS = /^\s*\d{1,2}(?:\s*(?:,|;|&|and|\s)\s*\d{1,2})*\s*$/i;

export type ReaderVerdict = { kind: 'none' } | { kind: 'cited'; numbers: number[] };

/** The verdict a bracket's body states: `none`, or source numbers; anything else (an address, words) is none of the service's business. */
const verdictOf = (body: string): ReaderVerdict | undefined => {
  if (NONE.test(body)) return { kind: 'none' };
  if (!NUMBERS.test(body)) return undefined;
  return { kind: 'cited', numbers: [...body.matchAll(/\d+/g)].map((found) => Number(found[0])) };
};

/** The verdict a reply states and the reply without it (none stated: no verdict, the text as written). */
export function readVerdict(text: string): { verdict: ReaderVerdict | undefined; text: string } {
  for (const match of text.matchAll(VERDICT)) {
    const verdict = verdictOf(match[1] ?? '');
    if (!verdict) continue;
    const before = text.slice(0, match.index);
    const after = text.slice(match.index + match[0].length);
    const joint = before.trim() && after.trim() ? (/\n\s*$/.test(before) || /^\s*\n/.test(after) ? '\n' : ' ') : '';
    return { verdict, text: `${before.trimEnd()}${joint}${after.trimStart()}`.trim() };
  }
  return { verdict: undefined, text };
}

/**
 * The model's deltas with the verdict held back: from an opening bracket until it is (or can no
 * longer become) a verdict; after `none` nothing more of the model's text goes out. `end()`
 * lets out a bracket still held when the reply ends.
 */
export function readerStream(send: (delta: string) => void) {
  let held = '';
  let closed = false;
  /** After a verdict: the whitespace that followed it is not sent. */
  let trimming = false;
  return {
    delta(delta: string): void {
      if (closed) return;
      let out = '';
      for (const char of delta) {
        if (held) {
          held += char;
          const whole = VERDICT_WHOLE.exec(held);
          const verdict = whole ? verdictOf(whole[1] ?? '') : undefined;
          if (verdict) {
            held = '';
            closed = verdict.kind === 'none';
            trimming = true;
            if (closed) break;
          } else if (whole || !VERDICT_OPEN.test(held)) {
            // Not a verdict after all: let it out (a bracket that broke it may open one).
            const reopens = char === '[' && held.length > 1;
            out += reopens ? held.slice(0, -1) : held;
            held = reopens ? char : '';
          }
        } else if (char === '[') {
          held = char;
        } else if (!trimming || !/\s/.test(char)) {
          trimming = false;
          out += char;
        }
      }
      if (out) send(out);
    },
    end(): void {
      if (held && !closed) send(held);
      held = '';
    },
  };
}

/** The passages the verdict names (valid numbers, each page or document once, at most two). */
function citedSources(verdict: ReaderVerdict | undefined, sources: readonly CitedSource[]): CitedSource[] {
  if (verdict?.kind !== 'cited') return [];
  const cited: CitedSource[] = [];
  for (const n of verdict.numbers) {
    const source = sources[n - 1];
    if (!source || cited.some((seen) => seen.title === source.title && seen.url === source.url)) continue;
    cited.push(source);
    if (cited.length === MAX_CITED) break;
  }
  return cited;
}

export interface ReaderReply {
  /** The reply's body: the model's text without the verdict, or the service's words for `none`. */
  text: string;
  /** The "Source:" line to end the reply with (after any words a tool asked for). */
  sources?: string;
  /** The model said the passages do not answer the question: the service's words replaced its text (not streamed yet), a knowledge miss. */
  declined: boolean;
}

/**
 * The reply as the customer gets it, from the model's text and the passages it was given:
 * `[sources: none]` → the service's words (the offer of a person when `offerPerson`);
 * cited passages → the model's text and the "Source:" line; no verdict → the text as written.
 */
export function readerReply(
  text: string,
  sources: readonly CitedSource[],
  options: { language: Language; offerPerson: boolean; markdownLinks: boolean },
): ReaderReply {
  const { verdict, text: said } = readVerdict(text);
  if (verdict?.kind === 'none') return { text: knowledgeMissingReply(options.language, options.offerPerson), declined: true };
  const line = sourcesLine(options.language, citedSources(verdict, sources), options.markdownLinks);
  return { text: said, ...(line && said ? { sources: line } : {}), declined: false };
}
