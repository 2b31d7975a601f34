/**
 * Splits a reply into WhatsApp-sized messages (Twilio's 1,600-character body limit), breaking
 * at a paragraph, else a sentence, else a word — never mid-word unless a single word is longer
 * than the limit, and then never inside a character as the reader sees it (an emoji, a flag,
 * a letter with its accents): a lone half of a surrogate pair is not text.
 */
export const WHATSAPP_BODY_LIMIT = 1600;

/** Break candidates, best first; `keep` says whether the matched text stays with the earlier part. */
const BREAKS: readonly { pattern: RegExp; keep: boolean }[] = [
  { pattern: /\n\s*\n/g, keep: false },
  { pattern: /[.!?…](?=\s)/g, keep: true },
  { pattern: /\n/g, keep: false },
  { pattern: /\s/g, keep: false },
];

function cutPoint(text: string, limit: number): number {
  const window = text.slice(0, limit + 1);
  const minimum = Math.floor(limit / 3);
  for (const { pattern, keep } of BREAKS) {
    let best = -1;
    for (const match of window.matchAll(pattern)) {
      const end = keep ? match.index + match[0].length : match.index;
      if (end <= limit && end >= minimum) best = end;
    }
    if (best > 0) return best;
  }
  return lastGraphemeEnd(text, limit);
}

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

/** The end of the last whole grapheme cluster within `limit` (segments are produced lazily). */
function lastGraphemeEnd(text: string, limit: number): number {
  let end = 0;
  for (const { index, segment } of graphemes.segment(text)) {
    if (index + segment.length > limit) break;
    end = index + segment.length;
  }
  if (end > 0) return end;
  // One cluster longer than the limit (stacked combining marks): cut between code points.
  const code = text.charCodeAt(limit - 1);
  return code >= 0xd800 && code <= 0xdbff ? limit - 1 : limit;
}

export function splitMessage(text: string, limit = WHATSAPP_BODY_LIMIT): string[] {
  const parts: string[] = [];
  let rest = text.trim();
  while (rest.length > limit) {
    const cut = cutPoint(rest, limit);
    parts.push(rest.slice(0, cut).trimEnd());
    rest = rest.slice(cut).trimStart();
  }
  if (rest) parts.push(rest);
  return parts;
}
