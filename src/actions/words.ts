/**
 * The words the service itself writes around a confirmed action — the summary's frame, the
 * buttons, the typed-answer hint, the choice question and the fixed replies — in the languages
 * the widget speaks (en, es, fr, de, pt, ar). The language comes from a code the service checks
 * against this catalogue (never from the model's wording); an unknown code is English.
 *
 * Must never render a word the catalogue lacks: every language has every key (the type says so).
 */

export const ACTION_LANGUAGES = ['en', 'es', 'fr', 'de', 'pt', 'ar'] as const;
export type ActionLanguage = (typeof ACTION_LANGUAGES)[number];

interface ActionWords {
  pleaseConfirm: string;
  for: string;
  confirm: string;
  cancel: string;
  replyHint: string;
  /** The choice question's first line: `{action}` the tool's title, `{argument}` what is chosen. */
  choose: string;
  chooseHint: string;
  expired: string;
  refused: string;
}

const WORDS: Record<ActionLanguage, ActionWords> = {
  en: {
    pleaseConfirm: 'Please confirm:',
    for: 'For:',
    confirm: 'Confirm',
    cancel: 'Cancel',
    replyHint: 'Reply 1 or "yes" to confirm, 2 or "no" to cancel.',
    choose: 'For "{action}", please choose: {argument}',
    chooseHint: 'Reply with the number or the option.',
    expired: 'That confirmation has expired, so nothing was changed. Tell me if you would still like to do it.',
    refused: "That confirmation isn't valid for this request, so nothing was changed.",
  },
  es: {
    pleaseConfirm: 'Por favor, confirme:',
    for: 'Para:',
    confirm: 'Confirmar',
    cancel: 'Cancelar',
    replyHint: 'Responda 1 o «sí» para confirmar, 2 o «no» para cancelar.',
    choose: 'Para «{action}», elija: {argument}',
    chooseHint: 'Responda con el número o la opción.',
    expired: 'Esa confirmación ha caducado, así que no se ha cambiado nada. Dígame si aún quiere hacerlo.',
    refused: 'Esa confirmación no es válida para esta solicitud, así que no se ha cambiado nada.',
  },
  fr: {
    pleaseConfirm: 'Veuillez confirmer :',
    for: 'Pour :',
    confirm: 'Confirmer',
    cancel: 'Annuler',
    replyHint: 'Répondez 1 ou « oui » pour confirmer, 2 ou « non » pour annuler.',
    choose: 'Pour « {action} », veuillez choisir : {argument}',
    chooseHint: "Répondez avec le numéro ou l'option.",
    expired: "Cette confirmation a expiré, rien n'a donc été modifié. Dites-moi si vous souhaitez toujours le faire.",
    refused: "Cette confirmation n'est pas valable pour cette demande, rien n'a donc été modifié.",
  },
  de: {
    pleaseConfirm: 'Bitte bestätigen:',
    for: 'Für:',
    confirm: 'Bestätigen',
    cancel: 'Abbrechen',
    replyHint: 'Antworten Sie 1 oder „ja“ zum Bestätigen, 2 oder „nein“ zum Abbrechen.',
    choose: 'Für „{action}“ bitte wählen: {argument}',
    chooseHint: 'Antworten Sie mit der Nummer oder der Option.',
    expired: 'Diese Bestätigung ist abgelaufen, daher wurde nichts geändert. Sagen Sie mir, wenn Sie es trotzdem tun möchten.',
    refused: 'Diese Bestätigung gilt nicht für diese Anfrage, daher wurde nichts geändert.',
  },
  pt: {
    pleaseConfirm: 'Por favor, confirme:',
    for: 'Para:',
    confirm: 'Confirmar',
    cancel: 'Cancelar',
    replyHint: 'Responda 1 ou «sim» para confirmar, 2 ou «não» para cancelar.',
    choose: 'Para «{action}», escolha: {argument}',
    chooseHint: 'Responda com o número ou a opção.',
    expired: 'Essa confirmação expirou, por isso nada foi alterado. Diga-me se ainda quiser fazê-lo.',
    refused: 'Essa confirmação não é válida para este pedido, por isso nada foi alterado.',
  },
  ar: {
    pleaseConfirm: 'يرجى التأكيد:',
    for: 'لصالح:',
    confirm: 'تأكيد',
    cancel: 'إلغاء',
    replyHint: 'أرسل 1 أو «نعم» للتأكيد، أو 2 أو «لا» للإلغاء.',
    choose: 'بخصوص «{action}»، يرجى اختيار: {argument}',
    chooseHint: 'أرسل الرقم أو الخيار.',
    expired: 'انتهت صلاحية هذا التأكيد، لذلك لم يتغير شيء. أخبرني إن كنت لا تزال تريد ذلك.',
    refused: 'هذا التأكيد غير صالح لهذا الطلب، لذلك لم يتغير شيء.',
  },
};

/** The catalogue's language for an ISO 639-1 code (`es`, `es-MX`, `ES`); English for anything else. */
export function actionLanguage(...codes: readonly unknown[]): ActionLanguage {
  for (const code of codes) {
    if (typeof code !== 'string') continue;
    const primary = code.trim().toLowerCase().split(/[-_]/)[0];
    if ((ACTION_LANGUAGES as readonly string[]).includes(primary ?? '')) return primary as ActionLanguage;
  }
  return 'en';
}

export const wordsFor = (language: ActionLanguage): ActionWords => WORDS[language];

/** The typed answers that confirm or cancel, in every catalogue language (whatever language asked). */
export const CONFIRM_WORDS: ReadonlySet<string> = new Set([
  '1',
  'yes',
  'y',
  'confirm',
  'confirmed',
  'ok',
  'okay',
  'sure',
  'yes please',
  'go ahead',
  'do it',
  'si',
  'sí',
  'confirmar',
  'confirmo',
  'oui',
  'confirmer',
  'ja',
  'bestätigen',
  'sim',
  'نعم',
  'تأكيد',
  'أكد',
]);
export const CANCEL_WORDS: ReadonlySet<string> = new Set([
  '2',
  'no',
  'n',
  'cancel',
  'stop',
  'no thanks',
  'nope',
  "don't",
  'cancelar',
  'non',
  'annuler',
  'nein',
  'abbrechen',
  'não',
  'nao',
  'لا',
  'إلغاء',
  'الغاء',
]);

/** A typed answer as the word sets hold them: lower case, punctuation gone, Arabic-Indic digits as ASCII. */
export function normaliseAnswer(text: string): string {
  return text
    .normalize('NFC')
    .toLowerCase()
    .replace(/[\u0660-\u0669]/g, (digit) => String(digit.charCodeAt(0) - 0x0660))
    .replace(/[^\p{L}\p{M}\p{N}' ]+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}
