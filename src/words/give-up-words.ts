/**
 * What the service tells a customer whose message it gave up on (its retries spent, or a
 * message that can't be answered), in the widget's six languages. It never asks them to send it
 * again: the message went to a person (`handedOver` with `{team}`, the team's name in that
 * language, read after "our"; or, for a team that is closed, `handedOverClosed` followed by the
 * team's opening words), or, with no team to hand it to, `apology` asks nothing.
 */
import type { Language } from './language.js';

interface GiveUpWords {
  /** No team can take the message: an apology that asks nothing of the customer. */
  apology: string;
  /** The message went to the team, which is open: a person answers in this conversation. */
  handedOver: string;
  /** The message went to a closed team: followed by when it is back (`hours-words.ts`). */
  handedOverClosed: string;
}

const WORDS: Record<Language, GiveUpWords> = {
  en: {
    apology: "Sorry — something went wrong on our side and we couldn't answer your last message. We're sorry for the wait.",
    handedOver:
      "Sorry — something went wrong on our side and we couldn't answer your last message, so we've passed it to our {team}: a person will answer you here.",
    handedOverClosed: "Sorry — something went wrong on our side and we couldn't answer your last message, so we've passed it to a person.",
  },
  es: {
    apology: 'Lo sentimos: algo ha fallado por nuestra parte y no hemos podido responder a su último mensaje. Disculpe la espera.',
    handedOver:
      'Lo sentimos: algo ha fallado por nuestra parte y no hemos podido responder a su último mensaje, así que lo hemos pasado a nuestro {team}: una persona le responderá aquí.',
    handedOverClosed: 'Lo sentimos: algo ha fallado por nuestra parte y no hemos podido responder a su último mensaje, así que lo hemos pasado a una persona.',
  },
  fr: {
    apology: "Désolé, un problème est survenu de notre côté et nous n'avons pas pu répondre à votre dernier message. Merci de votre patience.",
    handedOver:
      "Désolé, un problème est survenu de notre côté et nous n'avons pas pu répondre à votre dernier message ; nous l'avons transmis à notre {team} : une personne vous répondra ici.",
    handedOverClosed:
      "Désolé, un problème est survenu de notre côté et nous n'avons pas pu répondre à votre dernier message ; nous l'avons transmis à une personne.",
  },
  de: {
    apology:
      'Entschuldigung – bei uns ist etwas schiefgelaufen, und wir konnten Ihre letzte Nachricht nicht beantworten. Bitte entschuldigen Sie die Wartezeit.',
    handedOver:
      'Entschuldigung – bei uns ist etwas schiefgelaufen, und wir konnten Ihre letzte Nachricht nicht beantworten. Wir haben sie an unser {team} weitergegeben: Ein Mensch antwortet Ihnen hier.',
    handedOverClosed:
      'Entschuldigung – bei uns ist etwas schiefgelaufen, und wir konnten Ihre letzte Nachricht nicht beantworten. Wir haben sie an einen Menschen weitergegeben.',
  },
  pt: {
    apology: 'Desculpe — algo correu mal do nosso lado e não conseguimos responder à sua última mensagem. Lamentamos a espera.',
    handedOver:
      'Desculpe — algo correu mal do nosso lado e não conseguimos responder à sua última mensagem, por isso passámo-la à nossa {team}: uma pessoa irá responder-lhe aqui.',
    handedOverClosed: 'Desculpe — algo correu mal do nosso lado e não conseguimos responder à sua última mensagem, por isso passámo-la a uma pessoa.',
  },
  ar: {
    apology: 'عذرًا، حدث خطأ من جهتنا ولم نتمكن من الرد على رسالتك الأخيرة. نعتذر عن الانتظار.',
    handedOver: 'عذرًا، حدث خطأ من جهتنا ولم نتمكن من الرد على رسالتك الأخيرة، لذا أحلناها إلى {team} لدينا: سيرد عليك شخص هنا.',
    handedOverClosed: 'عذرًا، حدث خطأ من جهتنا ولم نتمكن من الرد على رسالتك الأخيرة، لذا أحلناها إلى شخص.',
  },
};

export const giveUpWords = (language: Language): GiveUpWords => WORDS[language];
