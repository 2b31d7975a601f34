/**
 * The service's own fixed words to customers outside confirmed actions (those are in
 * src/actions/words.ts): the company question of `select_entity`, the reply to an answer whose
 * question expired, and a WhatsApp list message's button. Never model-written; every language
 * has every key (the type says so).
 */
import type { Language } from './language.js';

interface ServiceWords {
  /** `select_entity`'s question, above its numbered companies. */
  whichCompany: string;
  /** Below the numbered companies. */
  whichCompanyHint: string;
  /** Asked once more after an answer that names no company: `{count}` how many there are. */
  whichCompanyAgain: string;
  /** An answer to a question whose turn can no longer be resumed. */
  questionExpired: string;
  /** The button that opens a WhatsApp list message (at most 20 characters). */
  listButton: string;
}

const WORDS: Record<Language, ServiceWords> = {
  en: {
    whichCompany: 'Which company is this about?',
    whichCompanyHint: 'Reply with the number or the name.',
    whichCompanyAgain: "Sorry, I didn't catch which one. Reply with a number from 1 to {count}, or the company's name.",
    questionExpired: 'Sorry, that question has expired. Could you tell me again what you would like to do?',
    listButton: 'Choose',
  },
  es: {
    whichCompany: '¿De qué empresa se trata?',
    whichCompanyHint: 'Responda con el número o el nombre.',
    whichCompanyAgain: 'Perdone, no he entendido cuál. Responda con un número del 1 al {count} o con el nombre de la empresa.',
    questionExpired: 'Lo siento, esa pregunta ha caducado. ¿Podría decirme de nuevo qué le gustaría hacer?',
    listButton: 'Elegir',
  },
  fr: {
    whichCompany: "De quelle entreprise s'agit-il ?",
    whichCompanyHint: 'Répondez avec le numéro ou le nom.',
    whichCompanyAgain: "Désolé, je n'ai pas compris laquelle. Répondez avec un numéro de 1 à {count}, ou le nom de l'entreprise.",
    questionExpired: 'Désolé, cette question a expiré. Pourriez-vous me redire ce que vous souhaitez faire ?',
    listButton: 'Choisir',
  },
  de: {
    whichCompany: 'Um welches Unternehmen geht es?',
    whichCompanyHint: 'Antworten Sie mit der Nummer oder dem Namen.',
    whichCompanyAgain: 'Entschuldigung, ich habe nicht verstanden, welches. Antworten Sie mit einer Nummer von 1 bis {count} oder dem Namen des Unternehmens.',
    questionExpired: 'Entschuldigung, diese Frage ist abgelaufen. Könnten Sie mir noch einmal sagen, was Sie tun möchten?',
    listButton: 'Auswählen',
  },
  pt: {
    whichCompany: 'De que empresa se trata?',
    whichCompanyHint: 'Responda com o número ou o nome.',
    whichCompanyAgain: 'Desculpe, não percebi qual. Responda com um número de 1 a {count} ou com o nome da empresa.',
    questionExpired: 'Desculpe, essa pergunta expirou. Pode dizer-me novamente o que gostaria de fazer?',
    listButton: 'Escolher',
  },
  ar: {
    whichCompany: 'بأي شركة يتعلق هذا؟',
    whichCompanyHint: 'أرسل الرقم أو الاسم.',
    whichCompanyAgain: 'عذرًا، لم أفهم أيّها تقصد. أرسل رقمًا من 1 إلى {count} أو اسم الشركة.',
    questionExpired: 'عذرًا، انتهت صلاحية هذا السؤال. هل يمكنك إخباري مجددًا بما تريد فعله؟',
    listButton: 'اختر',
  },
};

export const serviceWords = (language: Language): ServiceWords => WORDS[language];
