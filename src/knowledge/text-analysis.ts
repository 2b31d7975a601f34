/**
 * How the index reads text in the six languages the service speaks (en, es, fr, de, pt, ar):
 * Unicode words (Arabic script included), folded (lower case, accents and Arabic diacritics gone,
 * hamza-carrying alefs to bare alef, ta marbuta to ha, alef maqsura to ya, ß to ss), the six
 * languages' commonest words dropped, and stemmed: English by Orama's Porter stemmer, the other
 * five by light suffix (Arabic: prefix and suffix) stripping, since Orama ships no other stemmer.
 * A passage is stemmed in its own language (its source's, else the one its words show); a query,
 * whose language is not known, in each language the index holds.
 */
import { tokenizer as oramaTokenizer } from '@orama/orama/components';
import { LANGUAGES, type Language } from '../words/language.js';

const STOP_WORD_LISTS: Record<Language, string> = {
  en:
    'the a an and or of to in on for with is are be do does did can could would should my your our you we i it its this that what how when where who why which ' +
    'have has had will from at by about as me us not any there their them they was were long much many get',
  es: 'el la los las un una y o de del en con por para es son que como cuando donde mi su tu se lo al',
  fr: 'le la les des du et ou en dans pour avec est sont que qui comment quand mon ma mes votre vos je il elle',
  de: 'der die das ein eine und oder von zu im in mit fur ist sind wie wann wo mein meine ich sie es den dem',
  pt: 'o os as um uma e de ou do da dos das em no na com para e sao como quando onde meu minha voce nao',
  ar: 'في من على الى عن ما ماذا هل كيف متى اين هذا هذه ذلك مع ان او لا لم لن انا انت هو هي نحن كم',
};

/** Lower case, no accents or Arabic diacritics, one form per Arabic letter. */
function fold(text: string): string {
  return text
    .toLowerCase()
    .normalize('NFD')
    .replace(/\p{Mn}+/gu, '')
    .replace(/ـ/g, '')
    .replace(/ة/g, 'ه')
    .replace(/ى/g, 'ي')
    .replace(/ß/g, 'ss');
}

const STOP_WORDS: Record<Language, Set<string>> = Object.fromEntries(
  LANGUAGES.map((language) => [language, new Set(fold(STOP_WORD_LISTS[language]).split(/\s+/))]),
) as Record<Language, Set<string>>;
const ALL_STOP_WORDS = new Set(LANGUAGES.flatMap((language) => [...STOP_WORDS[language]]));

/** Suffixes each light stemmer strips (longest first; the first that leaves ≥ 3 letters wins), on folded words. */
const SUFFIXES: Record<'es' | 'fr' | 'de' | 'pt', string[]> = {
  es: 'amientos imientos amiento imiento aciones uciones acion ucion mente ables ibles istas idades idad able ible ista osos osas ivas ivos ando iendo ados adas idos idas oso osa iva ivo ado ada ido ida ar er ir es os as s o a e'.split(
    ' ',
  ),
  pt: 'amentos imentos amento imento acoes acao mente aveis iveis istas idades idade avel ivel ista osos osas ivas ivos ando endo indo ados adas idos idas oso osa iva ivo ado ada ido ida ar er ir es os as s o a e'.split(
    ' ',
  ),
  fr: 'issements issement atrices ateurs ations ements euses ables istes ments atrice ateur ation ement ites euse ives able iste ment eux ite ive ifs ees if ee es er ez e s x'.split(
    ' ',
  ),
  de: 'ungen heiten keiten heit keit ung lich isch ern em en er es e s n'.split(' '),
};

function stripSuffix(word: string, suffixes: readonly string[], minStem = 3): string {
  for (const suffix of suffixes) if (word.length - suffix.length >= minStem && word.endsWith(suffix)) return word.slice(0, -suffix.length);
  return word;
}

const ARABIC_PREFIXES = ['وال', 'بال', 'كال', 'فال', 'لل', 'ال'];
const ARABIC_SUFFIXES = ['ها', 'ان', 'ات', 'ون', 'ين', 'يه', 'ه', 'ي'];

/** Light10-style Arabic stemming (Larkey et al.): a leading wa-, the article and its fused prepositions, common suffixes. */
function arabicStem(word: string): string {
  let rest = word.length > 3 && word.startsWith('و') ? word.slice(1) : word;
  for (const prefix of ARABIC_PREFIXES) {
    if (rest.startsWith(prefix) && rest.length - prefix.length >= 2) {
      rest = rest.slice(prefix.length);
      break;
    }
  }
  for (const suffix of ARABIC_SUFFIXES) if (rest.length - suffix.length >= 2 && rest.endsWith(suffix)) rest = rest.slice(0, -suffix.length);
  return rest;
}

const english = oramaTokenizer.createTokenizer({ language: 'english', stemming: true }).stemmer as (word: string) => string;

const STEMMERS: Record<Language, (word: string) => string> = {
  en: (word) => english(word),
  es: (word) => stripSuffix(word, SUFFIXES.es),
  pt: (word) => stripSuffix(word, SUFFIXES.pt),
  fr: (word) => stripSuffix(word, SUFFIXES.fr),
  de: (word) => stripSuffix(word, SUFFIXES.de),
  ar: arabicStem,
};

const ARABIC_LETTER = /[\u0600-\u06ff]/;

/** A word's stem in `language` (Arabic-script words by the Arabic stemmer whatever the language). */
export function stem(word: string, language: Language): string {
  if (/\d/.test(word)) return word;
  return ARABIC_LETTER.test(word) ? arabicStem(word) : STEMMERS[language](word);
}

/** The folded words of a text, in order. */
export function words(text: string): string[] {
  return fold(text).match(/[\p{L}\p{N}]+/gu) ?? [];
}

export const isStopWord = (word: string) => ALL_STOP_WORDS.has(word);

/** The language a text's words show: Arabic script, else the Latin-script language with the most of its common words (English on a tie). */
export function detectLanguage(folded: readonly string[]): Language {
  let arabic = 0;
  const counts = new Map<Language, number>();
  for (const word of folded.slice(0, 400)) {
    if (ARABIC_LETTER.test(word)) arabic += 1;
    for (const language of LANGUAGES) if (STOP_WORDS[language].has(word)) counts.set(language, (counts.get(language) ?? 0) + 1);
  }
  if (arabic > folded.length / 3) return 'ar';
  let best: Language = 'en';
  for (const [language, count] of counts) if (count > (counts.get(best) ?? 0)) best = language;
  return best;
}

/** The indexable terms of a text in `language`: its words, stop words out, each stemmed (duplicates kept: they are term frequency). */
export function terms(folded: readonly string[], language: Language): string[] {
  const out: string[] = [];
  for (const word of folded) if (word.length >= 2 && !ALL_STOP_WORDS.has(word)) out.push(stem(word, language));
  return out;
}

/** The words of a query that can tell passages apart (folded, no stop words, ≥ 3 letters or holding a digit), once each. */
export function significantWords(query: string): string[] {
  return [...new Set(words(query).filter((word) => (word.length >= 3 || /\d/.test(word)) && !ALL_STOP_WORDS.has(word)))];
}
