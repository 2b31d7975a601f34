/**
 * The service's own words around the business's published content, in the widget's six
 * languages: what a customer is told when the content does not answer their question (and the
 * offer of a person, on a channel that can hand over), and the "Source:" line the service writes
 * under an answer from the passages the model cited — each passage's title, with its link when it
 * has one (a plain address on a channel that shows text as written, a `[title](address)` link on
 * one that renders them). Never model-written: the titles and addresses are the business's own.
 */
import type { Language } from './language.js';
import { serviceWords } from './service-words.js';

/** The offer of a person, after "I don't have that information". */
const OFFER_PERSON: Record<Language, string> = {
  en: 'Would you like me to put you in touch with someone from our team?',
  es: '¿Quiere que le ponga en contacto con una persona de nuestro equipo?',
  fr: "Voulez-vous que je vous mette en relation avec une personne de l'équipe ?",
  de: 'Möchten Sie, dass ich Sie mit jemandem aus unserem Team verbinde?',
  pt: 'Quer que o ponha em contacto com uma pessoa da nossa equipa?',
  ar: 'هل تريد أن أوصلك بأحد أعضاء فريقنا؟',
};

/** A cited passage as the service names it. */
export interface CitedSource {
  title: string;
  /** The page's (or document's) address; empty when it has none. */
  url: string;
}

/** What the customer is told when the business's content has no answer (`offerPerson`: the channel can hand over). */
export function knowledgeMissingReply(language: Language, offerPerson: boolean): string {
  const missing = serviceWords(language).knowledgeMissing;
  return offerPerson ? `${missing} ${OFFER_PERSON[language]}` : missing;
}

/** An absolute http(s) address without credentials, normalised; undefined for anything else. */
function linkable(raw: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password) return undefined;
  return url.href;
}

/** A title on one line, without the characters a `[title](address)` link is made of. */
const plainTitle = (title: string) =>
  title
    .replace(/[[\]()<>*_`]/g, ' ')
    .replace(/[\p{Cc}\p{Zl}\p{Zp}\s]+/gu, ' ')
    .trim()
    .slice(0, 120);

/**
 * The "Source:" line for the cited passages (undefined when there are none): each title, and its
 * address when it is an http(s) one — a `[title](address)` link when `markdownLinks`.
 */
export function sourcesLine(language: Language, sources: readonly CitedSource[], markdownLinks: boolean): string | undefined {
  const items = sources.flatMap((source) => {
    const title = plainTitle(source.title);
    const url = linkable(source.url);
    if (!url) return title ? [title] : [];
    if (!markdownLinks) return [title ? `${title} – ${url}` : url];
    return [`[${title || url}](${url.replace(/\(/g, '%28').replace(/\)/g, '%29')})`];
  });
  if (items.length === 0) return undefined;
  return `${serviceWords(language).sourceLabel}: ${items.join(' · ')}`;
}
