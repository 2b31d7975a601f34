/**
 * Personal data out of a text a teammate or a customer wrote, before it reaches a model or an
 * owner: a table of rules applied in order, each replacing what it finds by a placeholder —
 * `[email]`, `[date]` (a full date with its year), `[address]` (a street with its number, a
 * postcode), `[number]` (a reference after its word, a code mixing letters and digits, an IBAN,
 * any run of five or more digits that is not an amount), `[phone]` (libphonenumber-js, with the
 * widget's languages' countries as defaults), `[name]` (the names the caller knows, a capitalised
 * name after an introduction, a greeting, a sign-off or a title, after a verb whose object is a
 * person ("ask Kowalczyk") or before what only a person does ("Okonkwo will pick it up"), a
 * surname after a removed name, an @handle). What is and isn't removed is listed in docs/knowledge.md.
 */
import { PhoneNumberMatcher, type CountryCode } from 'libphonenumber-js/core';
import metadata from 'libphonenumber-js/min/metadata';
import {
  ARABIC_NAME_INTRODUCERS,
  CURRENCY,
  DETERMINERS,
  MONTHS,
  NAME_INTRODUCERS,
  NAME_PARTICLES,
  NOT_ACTORS,
  NOT_NAMES,
  NUMBER_SUFFIXES,
  PERSON_OBJECT_VERBS,
  PERSON_PREDICATES,
  REFERENCE_QUALIFIERS,
  REFERENCE_WORDS,
  STREET_AFTER,
  STREET_BEFORE,
  STREET_SUFFIXES,
} from './redaction-words.js';

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
const alternatives = (words: readonly string[]) =>
  [...words]
    .sort((a, b) => b.length - a.length)
    .map(escaped)
    .join('|');
/** Lower-case words as written lower-case, capitalised or in capitals (for patterns that must tell a capital from a small letter). */
const anyCase = (words: readonly string[]) =>
  alternatives([...new Set(words.flatMap((word) => [word, word.charAt(0).toUpperCase() + word.slice(1), word.toUpperCase()]))]);

/** Not inside a word (JavaScript's `\b` knows ASCII letters only). */
const START = '(?<![\\p{L}\\p{N}_])';
const END = '(?![\\p{L}\\p{N}_])';
/** A digit, Western or Arabic-Indic. */
const D = '[0-9\\u0660-\\u0669\\u06F0-\\u06F9]';
const WORD = "\\p{Lu}[\\p{L}'’-]*";
/** A name's word: two letters at least ("M." is a title, not a name). */
const NAME_WORD = "\\p{Lu}[\\p{L}'’-]+";

const EMAIL = /[\p{L}\p{N}._%+-]+@[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)+/gu;
/** A link's query and fragment (tokens, tracking ids), its path kept for the rules below. */
const URL_QUERY = /(https?:\/\/[^\s?#]+)[?#][^\s]*/giu;
const HANDLE = /(?<![\p{L}\p{N}_.@])@[\p{L}\p{N}_.]{2,}[\p{L}\p{N}_]/gu;

/** A date is not part of a longer dotted or dashed number ("06.12.34.56.78" is a phone number). */
const DATE_START = `(?<![\\p{L}\\p{N}_]|${D}[./-])`;
const DATE_END = `(?![\\p{L}\\p{N}_]|[./-]${D})`;
const MONTH = `(?:${alternatives(MONTHS)})\\.?`;
const YEAR = `(?:${D}{4})`;
const DATES = [
  new RegExp(`${DATE_START}${D}{1,2}[./-]${D}{1,2}[./-](?:${D}{4}|${D}{2})${DATE_END}`, 'gu'),
  new RegExp(`${DATE_START}${D}{4}[./-]${D}{1,2}[./-]${D}{1,2}${DATE_END}`, 'gu'),
  // 12 March 1985, 12th of March, 1985, 3 de mayo de 1990, 12. März 1985, 1er mars 1985, ١٢ مارس ١٩٨٥
  new RegExp(`${START}${D}{1,2}(?:st|nd|rd|th|er|º|\\.)?\\s+(?:(?:of|de|del)\\s+)?${MONTH}\\s*,?\\s+(?:(?:de|del)\\s+)?${YEAR}${END}`, 'giu'),
  // March 12, 1985
  new RegExp(`${START}${MONTH}\\s+${D}{1,2}(?:st|nd|rd|th)?,?\\s+${YEAR}${END}`, 'giu'),
];

const HOUSE = `${D}{1,4}(?:\\s?[a-zA-Z]${END}|\\s?bis|\\s?ter)?`;
/** What may follow a house number: ", 3º B", ", piso 2", ", Apt 4B", ", 2ª planta", ", 1.º esq.". */
const UNIT = `(?:,?\\s*(?:${D}{1,2}\\s?[º°ª]\\.?(?:\\s?[A-Za-z]${END})?|(?:apt|apto|piso|planta|puerta|étage|esc|stock|andar|interno|int)\\.?\\s*${D}{1,3}[A-Za-z]?))*`;
/** A street's name: capitalised words, particles between ("de la Paix", "Mayor", "5 de Mayo"). */
const STREET_NAME = `(?:\\s+(?:(?:${anyCase(NAME_PARTICLES)})\\s+)*(?:${WORD}|${D}+\\s+de\\s+${WORD}))`;
const ADDRESSES = [
  new RegExp(`${START}(?:${anyCase(STREET_BEFORE)})\\.?${STREET_NAME}{1,5},?\\s*(?:n\\.?\\s?[º°]|núm\\.?|no\\.?)?\\s*${HOUSE}${UNIT}`, 'gu'),
  new RegExp(
    `${START}${HOUSE},?\\s+(?:(?:${anyCase(STREET_BEFORE)})\\.?${STREET_NAME}{1,5}|(?:${WORD}\\s+){1,3}(?:${anyCase(STREET_AFTER)})\\.?${END})${UNIT}`,
    'gu',
  ),
  new RegExp(`${START}\\p{Lu}[\\p{L}-]*(?:${alternatives(STREET_SUFFIXES)})\\s*${HOUSE}${UNIT}`, 'gu'),
  /شارع(?:\s+[\p{L}]+){1,3}(?:\s+[0-9\u0660-\u0669]+)?/gu,
  // Postcodes with letters: the UK's, Canada's, the Netherlands'.
  /(?<![\p{L}\p{N}])(?:[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2}|[A-Z]\d[A-Z]\s?\d[A-Z]\d|\d{4}\s?[A-Z]{2})(?![\p{L}\p{N}])/gu,
];
/** A postcode and town after a street: "[address], 28013 Madrid", "[address] 1010 Wien". */
const POSTCODE_AFTER = new RegExp(`\\[address\\],?\\s*(?:${D}{4,5}(?:-${D}{3,4})?|\\[number\\])\\s+${WORD}`, 'gu');

/** A reference after its word: the next token with a digit (3+ characters) or five capitals ("order 4471", "pedido nº 5521", "localizador KXPLMQ"). */
const REFERENCE = new RegExp(
  `${START}(${anyCase(REFERENCE_WORDS)})((?:\\s*(?:${anyCase(REFERENCE_QUALIFIERS)})\\.?${END}|\\s*[:#]|\\s+){1,4})` +
    `(?=[\\p{L}\\p{N}-]*(?:${D}|\\p{Lu}{5}))([\\p{L}\\p{N}][\\p{L}\\p{N}/.-]+[\\p{L}\\p{N}])${END}`,
  'gu',
);
const HASH_NUMBER = new RegExp(`#${D}{2,}${END}`, 'gu');
const IBAN = /(?<![\p{L}\p{N}])[A-Z]{2}\d{2}(?:[ -]?[A-Z0-9]{4}){2,7}(?:[ -]?[A-Z0-9]{1,4})?(?![\p{L}\p{N}])/gu;

/** A token of letters and digits joined by - / _ . ("QX7-PLM", "ord-55822", "1Z999AA10123456784", "12345678Z"). */
const TOKEN = /(?<![\p{L}\p{N}_@[])[\p{L}\p{N}]+(?:[-/_.][\p{L}\p{N}]+)*(?![\p{L}\p{N}_\]])/gu;
const WITH_UNIT = new RegExp(`^\\d+(?:${alternatives(NUMBER_SUFFIXES)})$`, 'iu');
const LETTERS = /^\p{L}+$/u;
const DIGITS = /^\d+$/u;

/** Whether a token is a code: a segment mixing letters and digits (not a number with its unit), or a long number joined to letters. */
function isCode(token: string): boolean {
  const segments = token.split(/[-/_.]/);
  const alnum = segments.join('').length;
  if (alnum < 4 || !/\d/u.test(token) || !/\p{L}/u.test(token)) return false;
  if (segments.some((segment) => !LETTERS.test(segment) && !DIGITS.test(segment) && !WITH_UNIT.test(segment))) return alnum >= 5;
  const longest = Math.max(...segments.filter((segment) => DIGITS.test(segment)).map((segment) => segment.length), 0);
  return longest >= 4 || (longest >= 3 && segments.some((segment) => LETTERS.test(segment) && segment === segment.toUpperCase()));
}

/** Runs of digits joined by single separators: "600 111 222", "2024/0043", "123-45-6789". */
const DIGIT_RUN = new RegExp(`${START}${D}+(?:[ .,/-]${D}+)*${END}`, 'gu');
const AMOUNT = /^\d{1,3}(?:([.,])\d{3})(?:\1\d{3})*(?:[.,]\d{1,2})?$|^\d+[.,]\d{1,2}$/u;
const YEAR_RANGE = /^(?:19|20)\d{2}[-/](?:19|20)\d{2}$/u;

function replaceDigitRuns(text: string): string {
  return text.replace(DIGIT_RUN, (run: string, offset: number) => {
    const digits = run.replace(/[^\p{N}]/gu, '').length;
    if (digits < 5 || YEAR_RANGE.test(run) || AMOUNT.test(run)) return run;
    const before = text.slice(Math.max(0, offset - 5), offset).trimEnd();
    const after = text.slice(offset + run.length).trimStart();
    if (CURRENCY.test(after) || /(?:€|\$|£)$/u.test(before)) return run;
    return '[number]';
  });
}

const PHONE_COUNTRIES: readonly CountryCode[] = ['US', 'GB', 'ES', 'FR', 'DE', 'PT', 'IT', 'BR', 'SA', 'AE', 'MX'];

/** Phone numbers as libphonenumber-js finds them (possible numbers, 7+ digits), each country's format tried. */
function replacePhones(text: string): string {
  let clean = text;
  for (const defaultCountry of PHONE_COUNTRIES) {
    // `leniency` is read by the matcher though its types leave it out: POSSIBLE keeps fictional numbers such as (555) 123-4567.
    const matcher = new PhoneNumberMatcher(clean, { defaultCountry, v2: true, leniency: 'POSSIBLE' } as { defaultCountry: CountryCode; v2: true }, metadata);
    const found: { startsAt: number; endsAt: number }[] = [];
    while (matcher.hasNext()) {
      const match = matcher.next();
      const number = match ? clean.slice(match.startsAt, match.endsAt) : '';
      if (match && number.replace(/\D/g, '').length >= 7 && !YEAR_RANGE.test(number)) found.push(match);
    }
    for (const { startsAt, endsAt } of found.reverse()) clean = `${clean.slice(0, startsAt)}[phone]${clean.slice(endsAt)}`;
  }
  return clean;
}

const NAME = `${NAME_WORD}(?:\\s+(?:(?:${alternatives(NAME_PARTICLES)})\\s+)?${NAME_WORD}){0,2}`;
const INTRODUCED = new RegExp(`${START}((?:${alternatives(NAME_INTRODUCERS)})\\.?,?\\s+)(${NAME})`, 'giu');
const CAPITALISED = new RegExp(`^${NAME_WORD}$`, 'u');
const ARABIC_INTRODUCED = ARABIC_NAME_INTRODUCERS.map(
  ([word, count]) => new RegExp(`(?<![\\p{L}])(${escaped(word)}\\s+)(?:[\\p{L}]+)(?:\\s+[\\p{L}]+){0,${count - 1}}`, 'gu'),
);
/** A surname after a removed name: "[name] Lindqvist". */
const NAME_CONTINUED = new RegExp(`\\[name\\](?:\\s+(?:(?:${alternatives(NAME_PARTICLES)})\\s+)?\\p{Lu}\\p{Ll}[\\p{L}'’-]*)+`, 'gu');

/** A name as a person's place shows it: after a verb whose object is a person ("ask Kowalczyk", "pregunta a …", "fragen Sie …"). */
const ASKED = new RegExp(`${START}((?:${alternatives(PERSON_OBJECT_VERBS)}),?\\s+)(${NAME})`, 'giu');
/** …and before what only a person does ("Okonkwo will pick it up", "Gutiérrez te llamará"): one or two words with small letters after the capital. */
const ACTOR_WORD = "\\p{Lu}\\p{Ll}[\\p{L}'’-]*";
const ACTING = new RegExp(`${START}((?:${ACTOR_WORD}\\s+)?${ACTOR_WORD})(?=,?\\s+(?:${alternatives(PERSON_PREDICATES)})${END})`, 'gu');

/** The capitalised word or two before a person's predicate, as `[name]` unless a pronoun, a role, a carrier, or a noun after a determiner. */
function replaceActors(text: string): string {
  return text.replace(ACTING, (found: string, _name: string, offset: number) => {
    const words = found.split(/\s+/);
    const before = /([\p{L}'’]+)\s*$/u.exec(text.slice(0, offset))?.[1]?.toLowerCase();
    const [first = ''] = words;
    const skip = words.length === 2 && (NOT_ACTORS.has(first.toLowerCase()) || (before !== undefined && DETERMINERS.has(before))) ? 1 : 0;
    const previous = skip === 1 ? first.toLowerCase() : before;
    if (words.slice(skip).some((word) => NOT_ACTORS.has(word.toLowerCase())) || (previous !== undefined && DETERMINERS.has(previous))) return found;
    return [...words.slice(0, skip), '[name]'].join(' ');
  });
}

function replaceIntroducedNames(text: string, introduced: RegExp = INTRODUCED, notNames: ReadonlySet<string> = NOT_NAMES): string {
  const pattern = new RegExp(introduced.source, introduced.flags);
  let clean = '';
  let from = 0;
  for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
    const [, introducer = '', name = ''] = match;
    // The name's words must be capitalised as written (the match is case-insensitive for the introducer's sake).
    const kept: string[] = [];
    for (const word of name.split(/\s+/)) {
      if (!CAPITALISED.test(word) && !NAME_PARTICLES.includes(word)) break;
      kept.push(word);
    }
    while (NAME_PARTICLES.includes(kept.at(-1) ?? '')) kept.pop();
    const first = kept[0];
    if (first === undefined || notNames.has(first.toLowerCase()) || NOT_NAMES.has(first.toLowerCase())) {
      // Not a name: the words after the introducer may hold the next one ("Hola, me llamo Lucía").
      pattern.lastIndex = match.index + introducer.length;
      continue;
    }
    const start = match.index + introducer.length;
    clean += `${text.slice(from, start)}[name]`;
    from = start + kept.join(' ').length;
    pattern.lastIndex = from;
  }
  return clean + text.slice(from);
}

function replaceKnownNames(text: string, personal: readonly string[]): string {
  const words = personal.flatMap((value) => {
    const bare = value.replace(/^[a-z]+:/i, '').trim();
    return [bare, ...bare.split(/\s+/).filter((word) => word.length >= 3 && !NAME_PARTICLES.includes(word.toLowerCase()))].filter((word) => word.length >= 2);
  });
  let clean = text;
  for (const word of [...new Set(words)].sort((a, b) => b.length - a.length)) {
    clean = clean.replace(new RegExp(`(?<![\\p{L}\\p{N}])${escaped(word)}(?![\\p{L}\\p{N}])`, 'giu'), '[name]');
  }
  return clean;
}

/**
 * The text without personal data. `personal` lists what the caller knows of the people in it
 * (the customer's profile name, address and contacts, the teammates' names): each removed
 * wherever it appears, whole or word by word.
 */
export function withoutPersonalData(text: string, personal: readonly string[]): string {
  let clean = text.normalize('NFC').replace(EMAIL, '[email]').replace(URL_QUERY, '$1');
  clean = replaceKnownNames(clean, personal);
  for (const date of DATES) clean = clean.replace(date, '[date]');
  for (const address of ADDRESSES) clean = clean.replace(address, '[address]');
  clean = clean.replace(REFERENCE, (_whole: string, word: string, between: string) => `${word}${between}[number]`).replace(HASH_NUMBER, '#[number]');
  clean = clean.replace(IBAN, '[number]');
  clean = replacePhones(clean);
  clean = clean.replace(TOKEN, (token: string) => (isCode(token) ? '[number]' : token));
  clean = replaceDigitRuns(clean);
  clean = clean.replace(POSTCODE_AFTER, '[address]');
  clean = clean.replace(HANDLE, '[name]');
  clean = replaceIntroducedNames(clean);
  clean = replaceActors(replaceIntroducedNames(clean, ASKED, NOT_ACTORS));
  for (const arabic of ARABIC_INTRODUCED) clean = clean.replace(arabic, '$1[name]');
  return clean.replace(NAME_CONTINUED, '[name]');
}
