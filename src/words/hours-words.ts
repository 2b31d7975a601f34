/**
 * What the service tells a customer who asks for a person while the team is closed, in the
 * widget's six languages: when the team is back (`{when}`: a weekday and time in the team's
 * zone, or a weekday and date when it is a week or more away) and how it will reach them.
 * `{team}` is the team's name in that language (`team-words.ts`), read after "our".
 */
import type { Language } from './language.js';

interface HoursWords {
  /** The opening: `{day}` a weekday (with its date when far off), `{time}` a local time, `{zone}` the zone's short name. */
  when: string;
  /** The channel's own address reaches the customer (WhatsApp): the team answers in this conversation. */
  backHere: string;
  /** The team contacts the customer by the email or phone they gave. */
  backLater: string;
}

const WORDS: Record<Language, HoursWords> = {
  en: {
    when: '{day} at {time} ({zone})',
    backHere: 'Our {team} is back {when} and will answer here then. Meanwhile I can keep helping you.',
    backLater: 'Our {team} is back {when} and will contact you then. Meanwhile I can keep helping you.',
  },
  es: {
    when: 'el {day} a las {time} ({zone})',
    backHere: 'Nuestro {team} vuelve {when} y le responderá aquí entonces. Mientras tanto, puedo seguir ayudándole.',
    backLater: 'Nuestro {team} vuelve {when} y se pondrá en contacto con usted entonces. Mientras tanto, puedo seguir ayudándole.',
  },
  fr: {
    when: '{day} à {time} ({zone})',
    backHere: 'Notre {team} est de retour {when} et vous répondra ici. En attendant, je peux continuer à vous aider.',
    backLater: 'Notre {team} est de retour {when} et vous contactera à ce moment-là. En attendant, je peux continuer à vous aider.',
  },
  de: {
    when: 'am {day} um {time} ({zone})',
    backHere: 'Unser {team} ist {when} wieder da und antwortet Ihnen dann hier. Bis dahin helfe ich Ihnen gern weiter.',
    backLater: 'Unser {team} ist {when} wieder da und meldet sich dann bei Ihnen. Bis dahin helfe ich Ihnen gern weiter.',
  },
  pt: {
    when: '{day} às {time} ({zone})',
    backHere: 'A nossa {team} volta {when} e responderá aqui nessa altura. Entretanto, posso continuar a ajudar.',
    backLater: 'A nossa {team} volta {when} e entrará em contacto consigo nessa altura. Entretanto, posso continuar a ajudar.',
  },
  ar: {
    when: '{day} الساعة {time} ({zone})',
    backHere: 'يعود {team} لدينا {when} وسيرد عليك هنا حينها. وإلى ذلك الحين يمكنني مواصلة مساعدتك.',
    backLater: 'يعود {team} لدينا {when} وسيتواصل معك حينها. وإلى ذلك الحين يمكنني مواصلة مساعدتك.',
  },
};

export const hoursWords = (language: Language): HoursWords => WORDS[language];

/** Fills `{name}` placeholders. */
export function fill(template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(/\{(\w+)\}/g, (match, name: string) => values[name] ?? match);
}
