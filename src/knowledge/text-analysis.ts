/**
 * How the index reads text in the six languages the service speaks (en, es, fr, de, pt, ar):
 * Unicode words (Arabic script included), folded (lower case, accents and Arabic diacritics gone,
 * hamza-carrying alefs to bare alef, ta marbuta to ha, alef maqsura to ya, ß to ss), stop words
 * dropped (Orama's lists for the six languages, `@orama/stopwords`, and the chat filler no list
 * holds: greetings, thanks, "please", contraction fragments), and stemmed by Orama's Snowball
 * stemmers (`@orama/stemmers`). A passage is stemmed in its own language (its source's, else the
 * one its words show); a query, whose language is not known, in each language the index holds.
 */
import { stemmer as arabicStemmer } from '@orama/stemmers/arabic';
import { stemmer as englishStemmer } from '@orama/stemmers/english';
import { stemmer as frenchStemmer } from '@orama/stemmers/french';
import { stemmer as germanStemmer } from '@orama/stemmers/german';
import { stemmer as portugueseStemmer } from '@orama/stemmers/portuguese';
import { stemmer as spanishStemmer } from '@orama/stemmers/spanish';
import { stopwords as arabicStopWords } from '@orama/stopwords/arabic';
import { stopwords as englishStopWords } from '@orama/stopwords/english';
import { stopwords as frenchStopWords } from '@orama/stopwords/french';
import { stopwords as germanStopWords } from '@orama/stopwords/german';
import { stopwords as portugueseStopWords } from '@orama/stopwords/portuguese';
import { stopwords as spanishStopWords } from '@orama/stopwords/spanish';
import { LANGUAGES, type Language } from '../words/language.js';

/** What customers add in chat that says nothing of what they ask, and question words (no stop-word list holds them all). */
const CHAT_FILLER: Record<Language, string> = {
  en:
    'hi hello hey hiya heya yo thanks thank cheers please pls plz ok okay um uh hmm lol guys u ur wanna gonna gotta kinda sorta ' +
    'basically actually just really like something anything stuff thing things quick question wondering wonder know tell bother sorry ' +
    'nah yeah yes good morning afternoon evening long much many get gets got getting need want roughly usually maybe possible chance ask help ' +
    'one now still ago around kind thinking think love told friend checking happens happen came come comes put see lying guess bit way ' +
    'isn aren wasn weren don doesn didn won wouldn couldn shouldn hasn haven ve ll re im id',
  es: 'hola gracias porfa favor oye vale bueno pues saber quisiera querria necesito buenas cuanto cuantos cuanta cual cuales',
  fr: 'bonjour salut merci svp stp voudrais savoir besoin combien comment pourquoi quel quels quelle',
  de: 'hallo danke bitte mochte moechte wissen brauche lange wieviel warum welche welcher welches',
  pt: 'ola obrigado obrigada favor gostaria saber preciso quanto quantos quanta qual quais',
  ar: 'مرحبا شكرا فضلك سمحت',
};

const STOP_WORD_LISTS: Record<Language, readonly string[]> = {
  en: englishStopWords,
  es: spanishStopWords,
  fr: frenchStopWords,
  de: germanStopWords,
  pt: portugueseStopWords,
  ar: arabicStopWords,
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

const foldedWords = (list: readonly string[]) => list.flatMap((entry) => fold(entry).match(/[\p{L}\p{N}]+/gu) ?? []);

const STOP_WORDS: Record<Language, Set<string>> = Object.fromEntries(
  LANGUAGES.map((language) => [language, new Set(foldedWords(STOP_WORD_LISTS[language]))]),
) as Record<Language, Set<string>>;
const ALL_STOP_WORDS = new Set([
  ...LANGUAGES.flatMap((language) => [...STOP_WORDS[language]]),
  ...LANGUAGES.flatMap((language) => foldedWords(CHAT_FILLER[language].split(' '))),
]);

const STEMMERS: Record<Language, (word: string) => string> = {
  en: englishStemmer,
  es: spanishStemmer,
  fr: frenchStemmer,
  de: germanStemmer,
  pt: portugueseStemmer,
  ar: (word) => fold(arabicStemmer(word)),
};

const ARABIC_LETTER = /[\u0600-\u06ff]/;

/** A word's stem in `language` (Arabic-script words by the Arabic stemmer whatever the language; words with digits as they are). */
export function stem(word: string, language: Language): string {
  if (/\d/.test(word)) return word;
  return ARABIC_LETTER.test(word) ? STEMMERS.ar(word) : STEMMERS[language](word);
}

/** The folded words of a text, in order. */
export function words(text: string): string[] {
  return fold(text).match(/[\p{L}\p{N}]+/gu) ?? [];
}

export const isStopWord = (word: string) => ALL_STOP_WORDS.has(word);

/**
 * The commonest words of each language, for telling which one a text is in (Orama's lists run to
 * hundreds of words and share many between Spanish and Portuguese: "cinco", "dias").
 */
const COMMON_WORDS: Record<Language, Set<string>> = Object.fromEntries(
  Object.entries({
    en: 'the a an and or of to in on for with is are be do does did can could would should my your our you we i it its this that what how when where who why which have has had will from at by about as',
    es: 'el la los las un una y o de del en con por para es son que como cuando donde mi su tu se lo al',
    fr: 'le la les des du et ou en dans pour avec est sont que qui comment quand mon ma mes votre vos je il elle',
    de: 'der die das ein eine und oder von zu im in mit fur ist sind wie wann wo mein meine ich sie es den dem',
    pt: 'o os as um uma e de ou do da dos das em no na com para e sao como quando onde meu minha voce nao',
    ar: 'في من على الى عن ما ماذا هل كيف متى اين هذا هذه ذلك مع ان او لا لم لن انا انت هو هي نحن كم',
  }).map(([language, list]) => [language, new Set(fold(list).split(' '))]),
) as Record<Language, Set<string>>;

/** The language a text's words show: Arabic script, else the Latin-script language with the most of its common words (English on a tie). */
export function detectLanguage(folded: readonly string[]): Language {
  let arabic = 0;
  const counts = new Map<Language, number>();
  for (const word of folded.slice(0, 400)) {
    if (ARABIC_LETTER.test(word)) arabic += 1;
    for (const language of LANGUAGES) if (COMMON_WORDS[language].has(word)) counts.set(language, (counts.get(language) ?? 0) + 1);
  }
  if (arabic > folded.length / 3) return 'ar';
  let best: Language = 'en';
  for (const [language, count] of counts) if (count > (counts.get(best) ?? 0)) best = language;
  return best;
}

/** The indexable terms of a text in `language`: its words, stop words out, each stemmed (duplicates kept: they are term frequency). */
export function terms(folded: readonly string[], language: Language): string[] {
  const out: string[] = [];
  for (const word of folded) if ((word.length >= 2 || /\d/.test(word)) && !ALL_STOP_WORDS.has(word)) out.push(stem(word, language));
  return out;
}

/** Stop words of four letters or more by their first letter. */
const LONG_STOP_WORDS = new Map<string, string[]>();
for (const word of ALL_STOP_WORDS) if (word.length >= 4) LONG_STOP_WORDS.set(word.charAt(0), [...(LONG_STOP_WORDS.get(word.charAt(0)) ?? []), word]);

/**
 * Whether a word is a misspelt stop word or filler ("wich", "plese"): one edit from one of four
 * letters or more, with the same first letter; a four-letter word only by a letter left out
 * ("code" is no misspelt "come").
 */
export const isMisspeltStopWord = (word: string) =>
  word.length >= 4 && (LONG_STOP_WORDS.get(word.charAt(0)) ?? []).some((stop) => (word.length > 4 || stop.length === 5) && withinEdits(word, stop, 1));

/**
 * The words of a query that can tell passages apart (folded, no stop words or filler, ≥ 2 letters
 * or holding a digit), once each; a decimal number is one ("1.72", "1,80").
 */
export function significantWords(query: string): string[] {
  return [...new Set(words(query.replace(/(\d)[.,](?=\d)/g, '$1')).filter((word) => (word.length >= 2 || /\d/.test(word)) && !ALL_STOP_WORDS.has(word)))];
}

/** Whether `a` and `b` are within `max` edits (insert, delete, substitute, swap two neighbours: Damerau–Levenshtein). */
export function withinEdits(a: string, b: string, max: number): boolean {
  if (Math.abs(a.length - b.length) > max) return false;
  let previous2: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, at) => at);
  for (let i = 1; i <= a.length; i += 1) {
    const row = [i];
    let least = i;
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min((previous[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) value = Math.min(value, (previous2[j - 2] ?? 0) + 1);
      row.push(value);
      least = Math.min(least, value);
    }
    if (least > max) return false;
    previous2 = previous;
    previous = row;
  }
  return (previous[b.length] ?? max + 1) <= max;
}
