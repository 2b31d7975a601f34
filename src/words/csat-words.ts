/**
 * The satisfaction question's words, in the widget's six languages: the question, its five
 * answers (best first; a WhatsApp list row holds 24 characters, so each label fits), the
 * invitation to comment after a rating, the thanks, and the answer to a second tap on a rated
 * question. Never model-written.
 */
import type { Language } from './language.js';

interface CsatWords {
  question: string;
  /** Scores 1 to 5, in that order (a numbered line's number is its score: a typed "4" is four stars). */
  scores: readonly [string, string, string, string, string];
  /** After a rating: a comment is welcome, and optional. */
  commentPrompt: string;
  /** After the comment. */
  thanks: string;
  /** A second tap on a question already rated. */
  alreadyNoted: string;
}

const STARS = ['⭐', '⭐⭐', '⭐⭐⭐', '⭐⭐⭐⭐', '⭐⭐⭐⭐⭐'] as const;
const labelled = (words: readonly [string, string, string, string, string]) =>
  words.map((word, index) => `${STARS[index] ?? ''} ${word}`) as unknown as CsatWords['scores'];

const WORDS: Record<Language, CsatWords> = {
  en: {
    question: 'How did we do? Tap a rating — it takes a second.',
    scores: labelled(['Very poor', 'Poor', 'Okay', 'Good', 'Excellent']),
    commentPrompt: 'Thank you! Anything you would like to add? Just write it here — or carry on, no need to answer.',
    thanks: 'Thank you for your feedback!',
    alreadyNoted: 'Your rating is already noted — thank you!',
  },
  es: {
    question: '¿Qué tal le hemos atendido? Elija una valoración; solo es un segundo.',
    scores: labelled(['Muy mala', 'Mala', 'Normal', 'Buena', 'Excelente']),
    commentPrompt: '¡Gracias! ¿Quiere añadir algo? Escríbalo aquí, o continúe sin más: no hace falta responder.',
    thanks: '¡Gracias por su opinión!',
    alreadyNoted: 'Ya tenemos su valoración. ¡Gracias!',
  },
  fr: {
    question: 'Comment avons-nous fait ? Choisissez une note, cela prend une seconde.',
    scores: labelled(['Très mauvais', 'Insuffisant', 'Correct', 'Bien', 'Excellent']),
    commentPrompt: 'Merci ! Souhaitez-vous ajouter quelque chose ? Écrivez-le ici, ou continuez simplement : aucune réponse n’est nécessaire.',
    thanks: 'Merci pour votre avis !',
    alreadyNoted: 'Votre note est déjà enregistrée. Merci !',
  },
  de: {
    question: 'Wie zufrieden waren Sie mit uns? Wählen Sie eine Bewertung – das dauert nur eine Sekunde.',
    scores: labelled(['Sehr schlecht', 'Schlecht', 'In Ordnung', 'Gut', 'Ausgezeichnet']),
    commentPrompt: 'Danke! Möchten Sie noch etwas ergänzen? Schreiben Sie es einfach hier – oder machen Sie einfach weiter.',
    thanks: 'Vielen Dank für Ihr Feedback!',
    alreadyNoted: 'Ihre Bewertung haben wir bereits. Vielen Dank!',
  },
  pt: {
    question: 'Como correu? Escolha uma avaliação — demora só um segundo.',
    scores: labelled(['Muito mau', 'Mau', 'Razoável', 'Bom', 'Excelente']),
    commentPrompt: 'Obrigado! Quer acrescentar alguma coisa? Escreva aqui — ou continue, não é preciso responder.',
    thanks: 'Obrigado pela sua opinião!',
    alreadyNoted: 'A sua avaliação já está registada. Obrigado!',
  },
  ar: {
    question: 'كيف كانت تجربتك معنا؟ اختر تقييمًا، لن يستغرق ذلك سوى لحظة.',
    scores: labelled(['ضعيف جدًا', 'ضعيف', 'مقبول', 'جيد', 'ممتاز']),
    commentPrompt: 'شكرًا لك! هل تود إضافة شيء؟ اكتبه هنا، أو تابع دون الحاجة إلى الرد.',
    thanks: 'شكرًا لك على رأيك!',
    alreadyNoted: 'تقييمك مسجل بالفعل، شكرًا لك!',
  },
};

export const csatWords = (language: Language): CsatWords => WORDS[language];
