/**
 * Text the service did not write itself — a tool's title, an argument's name or title, an enum
 * label from the MCP server's schema, a value the model wrote — made safe to show a customer in
 * the service's own frame (the confirmation summary, the choice question). That frame is the
 * customer's only protection against a misleading change, so what goes in it must read as what
 * it is, on one line:
 *
 * - bidi controls (U+202A–U+202E, U+2066–U+2069, U+200E/F, U+061C), zero-width and other
 *   invisible format characters (U+200B–U+200D, U+2060, U+FEFF, soft hyphens, tag characters:
 *   all of Unicode's `Cf`), lone surrogates and invisible marks are removed (an emoji joined by
 *   U+200D shows as its parts);
 * - line breaks and other controls (C0, C1 including NEL U+0085, U+2028/9) and letters that
 *   render blank (Hangul fillers, the braille blank) become a space, and runs of white space one
 *   space: nothing can start a line of its own (a forged "• For: …" detail);
 * - WhatsApp's markup characters become look-alikes that format nothing (`*` ∗, `_` ˍ, `~` ∼,
 *   `` ` `` ˋ), so a value reads as written — `ORD_12` stays recognisable — without bold,
 *   italics, strike-through or monospace hiding or stressing part of it;
 * - a pile of combining marks is cut to four (text drawn over the lines around it).
 */

/** Invisible format characters (bidi controls, zero-width, BOM, soft hyphen, tags…), lone surrogates, invisible marks. */
const INVISIBLE = /[\p{Cf}\p{Cs}\u034F\u17B4\u17B5]/gu;
/** What breaks a line or controls a terminal: C0 and C1 controls (NEL included), line and paragraph separators. */
const BREAKS = /[\p{Cc}\p{Zl}\p{Zp}]/gu;
/** Letters that render as blank space. */
const BLANK_LETTERS = /[\u115F\u1160\u3164\uFFA0\u2800]/gu;
const MARK_PILE = /(\p{M}{4})\p{M}+/gu;
/** WhatsApp's formatting characters and the look-alikes shown instead. */
const MARKUP: Readonly<Record<string, string>> = { '*': '\u2217', _: '\u02CD', '~': '\u223C', '`': '\u02CB' };
const MARKUP_CHARACTERS = /[*_~`]/g;

/** `text` as one safe line (see the module comment); cut to `maxChars` characters with "…" when longer. */
export function plainLine(text: string, maxChars = Number.POSITIVE_INFINITY): string {
  const line = text
    .replace(BREAKS, ' ')
    .replace(BLANK_LETTERS, ' ')
    .replace(INVISIBLE, '')
    .replace(MARK_PILE, '$1')
    .replace(MARKUP_CHARACTERS, (character) => MARKUP[character] ?? '')
    .replace(/\s+/g, ' ')
    .trim();
  const characters = Array.from(line);
  return characters.length > maxChars ? `${characters.slice(0, maxChars - 1).join('')}…` : line;
}
