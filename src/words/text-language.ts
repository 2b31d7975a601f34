/**
 * The language a customer's own words show, among the six the service writes in, for a channel
 * that does not say (WhatsApp): Arabic script, else the language with the most of its common chat
 * words and letters only it uses (ñ, ¿, ß, ã…). Undefined when the words show none clearly (a
 * "5", a tie): the caller keeps what it knew.
 */
import { languageOf, type Language } from './language.js';

type Latin = Exclude<Language, 'ar'>;

const COMMON_WORDS: Record<Latin, ReadonlySet<string>> = {
  en: new Set(
    'the and is are you your my i what how when where can do does please thanks thank hello hi with have has order want need to of it this that there'.split(
      ' ',
    ),
  ),
  es: new Set(
    'el los las y es que qué del por hola gracias quiero necesito cómo cuándo dónde mi tu su una con está tienen tenéis pedido buenos días'.split(' '),
  ),
  fr: new Set('le les et est je vous bonjour merci pour avec mon ma une des du qui quand où comment commande voudrais suis pas'.split(' ')),
  de: new Set('der die das und ist ich sie hallo danke bitte mit mein meine ein eine nicht wie wann wo was bestellung haben'.split(' ')),
  pt: new Set('o os e é eu você olá obrigado obrigada com meu minha um não como quando onde encomenda quero preciso'.split(' ')),
};

/** Letters (or marks) only one of the languages writes: each counts double. */
const OWN_LETTERS: Record<Latin, RegExp> = {
  en: /(?!)/gu,
  es: /[ñ¿¡]/gu,
  fr: /[èêàùœ]/gu,
  de: /[ßäöü]/gu,
  pt: /[ãõ]/gu,
};

const ARABIC = /[\u0600-\u06ff]/gu;

export function languageOfText(text: string): Language | undefined {
  const lower = text.toLowerCase();
  const letters = lower.match(/\p{L}/gu)?.length ?? 0;
  if (letters > 0 && (lower.match(ARABIC)?.length ?? 0) > letters / 2) return 'ar';
  const words = lower.match(/\p{L}+/gu) ?? [];
  const scores = (Object.keys(COMMON_WORDS) as Latin[]).map((language) => ({
    language,
    score: words.filter((word) => COMMON_WORDS[language].has(word)).length + 2 * (lower.match(OWN_LETTERS[language])?.length ?? 0),
  }));
  scores.sort((a, b) => b.score - a.score);
  const [best, second] = scores;
  if (!best || best.score === 0 || best.score === second?.score) return undefined;
  return best.language;
}

/** The customer's language: the one the channel reports (`metadata.language`), else the one their words show, else English. */
export const customerLanguage = (metadata: Readonly<Record<string, string>>, text: string): Language =>
  languageOf(metadata.language, metadata.language ? undefined : languageOfText(text));
