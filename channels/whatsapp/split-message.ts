/**
 * Splits a reply into WhatsApp-sized messages (Twilio's 1,600-character body limit), breaking
 * at a paragraph, else a sentence, else a word — never mid-word unless a single word is longer
 * than the limit.
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
  return limit;
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
