/**
 * The service's own fixed words to customers outside confirmed actions (those are in
 * src/actions/words.ts): the company question of `select_entity`, the reply to an answer whose
 * question expired, a WhatsApp list message's button, and what the service says when the model
 * can't (an empty answer, the holding message during a model
 * outage, the reply to a reset); what it says about a message it gave up on is `give-up-words.ts`. Never model-written; every language has every key (the
 * type says so).
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
  /** The model answered with nothing. */
  emptyReply: string;
  /** Sent once while the model providers are down, before the answer. */
  holding: string;
  /** The reply to a customer who reset the conversation. */
  reset: string;
  /** What the assistant says when the business's published content has nothing on a question (before offering a person). */
  knowledgeMissing: string;
  /** Before the links of the published pages an answer came from. */
  sourceLabel: string;
}

const WORDS: Record<Language, ServiceWords> = {
  en: {
    whichCompany: 'Which company is this about?',
    whichCompanyHint: 'Reply with the number or the name.',
    whichCompanyAgain: "Sorry, I didn't catch which one. Reply with a number from 1 to {count}, or the company's name.",
    questionExpired: 'Sorry, that question has expired. Could you tell me again what you would like to do?',
    listButton: 'Choose',
    emptyReply: "Sorry, I couldn't put an answer together for that. Could you say a little more about what you need?",
    holding: "We're having a technical problem — we'll answer here shortly.",
    reset: 'Done — we are starting a new conversation. How can I help?',
    knowledgeMissing: "I'm sorry, I don't have that information.",
    sourceLabel: 'Source',
  },
  es: {
    whichCompany: '¿De qué empresa se trata?',
    whichCompanyHint: 'Responda con el número o el nombre.',
    whichCompanyAgain: 'Perdone, no he entendido cuál. Responda con un número del 1 al {count} o con el nombre de la empresa.',
    questionExpired: 'Lo siento, esa pregunta ha caducado. ¿Podría decirme de nuevo qué le gustaría hacer?',
    listButton: 'Elegir',
    emptyReply: 'Lo siento, no he podido preparar una respuesta. ¿Podría contarme un poco más sobre lo que necesita?',
    holding: 'Estamos teniendo un problema técnico; le responderemos aquí en breve.',
    reset: 'Hecho: empezamos una conversación nueva. ¿En qué puedo ayudarle?',
    knowledgeMissing: 'Lo siento, no tengo esa información.',
    sourceLabel: 'Fuente',
  },
  fr: {
    whichCompany: "De quelle entreprise s'agit-il ?",
    whichCompanyHint: 'Répondez avec le numéro ou le nom.',
    whichCompanyAgain: "Désolé, je n'ai pas compris laquelle. Répondez avec un numéro de 1 à {count}, ou le nom de l'entreprise.",
    questionExpired: 'Désolé, cette question a expiré. Pourriez-vous me redire ce que vous souhaitez faire ?',
    listButton: 'Choisir',
    emptyReply: "Désolé, je n'ai pas pu formuler de réponse. Pourriez-vous m'en dire un peu plus sur ce dont vous avez besoin ?",
    holding: 'Nous rencontrons un problème technique ; nous vous répondrons ici très bientôt.',
    reset: "C'est fait : nous commençons une nouvelle conversation. Comment puis-je vous aider ?",
    knowledgeMissing: "Désolé, je n'ai pas cette information.",
    sourceLabel: 'Source',
  },
  de: {
    whichCompany: 'Um welches Unternehmen geht es?',
    whichCompanyHint: 'Antworten Sie mit der Nummer oder dem Namen.',
    whichCompanyAgain: 'Entschuldigung, ich habe nicht verstanden, welches. Antworten Sie mit einer Nummer von 1 bis {count} oder dem Namen des Unternehmens.',
    questionExpired: 'Entschuldigung, diese Frage ist abgelaufen. Könnten Sie mir noch einmal sagen, was Sie tun möchten?',
    listButton: 'Auswählen',
    emptyReply: 'Entschuldigung, ich konnte keine Antwort zusammenstellen. Können Sie etwas genauer sagen, was Sie brauchen?',
    holding: 'Wir haben gerade ein technisches Problem – wir antworten Ihnen hier in Kürze.',
    reset: 'Erledigt – wir beginnen ein neues Gespräch. Wie kann ich helfen?',
    knowledgeMissing: 'Das tut mir leid, diese Information habe ich nicht.',
    sourceLabel: 'Quelle',
  },
  pt: {
    whichCompany: 'De que empresa se trata?',
    whichCompanyHint: 'Responda com o número ou o nome.',
    whichCompanyAgain: 'Desculpe, não percebi qual. Responda com um número de 1 a {count} ou com o nome da empresa.',
    questionExpired: 'Desculpe, essa pergunta expirou. Pode dizer-me novamente o que gostaria de fazer?',
    listButton: 'Escolher',
    emptyReply: 'Desculpe, não consegui preparar uma resposta. Pode dizer-me um pouco mais sobre o que precisa?',
    holding: 'Estamos com um problema técnico — responderemos aqui em breve.',
    reset: 'Feito — vamos começar uma nova conversa. Como posso ajudar?',
    knowledgeMissing: 'Desculpe, não tenho essa informação.',
    sourceLabel: 'Fonte',
  },
  ar: {
    whichCompany: 'بأي شركة يتعلق هذا؟',
    whichCompanyHint: 'أرسل الرقم أو الاسم.',
    whichCompanyAgain: 'عذرًا، لم أفهم أيّها تقصد. أرسل رقمًا من 1 إلى {count} أو اسم الشركة.',
    questionExpired: 'عذرًا، انتهت صلاحية هذا السؤال. هل يمكنك إخباري مجددًا بما تريد فعله؟',
    listButton: 'اختر',
    emptyReply: 'عذرًا، لم أتمكن من إعداد إجابة. هل يمكنك توضيح ما تحتاجه أكثر قليلًا؟',
    holding: 'نواجه مشكلة تقنية، وسنرد عليك هنا قريبًا.',
    reset: 'تم، سنبدأ محادثة جديدة. كيف يمكنني مساعدتك؟',
    knowledgeMissing: 'عذرًا، ليست لدي هذه المعلومة.',
    sourceLabel: 'المصدر',
  },
};

export const serviceWords = (language: Language): ServiceWords => WORDS[language];
