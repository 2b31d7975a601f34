/**
 * The words the service itself writes around a confirmed action — the summary's frame, the
 * buttons, the typed-answer hint, the choice question and the fixed replies — in the languages
 * of src/words/language.ts (the language comes from a code the service checks against that list,
 * never from the model's wording; an unknown code is English).
 *
 * Must never render a word the catalogue lacks: every language has every key (the type says so).
 */
import type { Language } from '../words/language.js';
import { plainLine } from './sanitise.js';

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
  /** What the customer is told of the team's decision on a change: `{action}` its title, `{result}` the business system's answer, `{error}` why it failed. */
  teamDone: string;
  teamFailed: string;
  teamDeclined: string;
  /** What the customer is told of their own confirmed change when the model can't say it: `{action}`, `{result}`, `{error}` as above. */
  done: string;
  failed: string;
  cancelled: string;
  /** Before a confirmation of a change already done in the last 24 hours: `{time}` when (HH:MM UTC). */
  alreadyDone: string;
  /** A tap on a confirmation whose change already ran: `{action}`, `{time}`. */
  tappedDone: string;
}

const WORDS: Record<Language, ActionWords> = {
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
    teamDone: "Our team approved your request and it's done: {action}.{result}",
    teamFailed: "Our team approved your request ({action}), but it didn't go through: {error}",
    teamDeclined: "Our team reviewed your request ({action}) and won't go ahead with it. Reply here if you have any questions.",
    done: 'Done: {action}.{result}',
    failed: "It didn't go through: {action}. {error}",
    cancelled: 'Cancelled: {action}. Nothing was changed.',
    alreadyDone: 'You already did this today at {time} UTC. Do it again?',
    tappedDone: 'That change was already made at {time} UTC: {action}. Nothing else was changed.',
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
    teamDone: 'Nuestro equipo aprobó su solicitud y ya está hecha: {action}.{result}',
    teamFailed: 'Nuestro equipo aprobó su solicitud ({action}), pero no se pudo completar: {error}',
    teamDeclined: 'Nuestro equipo revisó su solicitud ({action}) y no la llevará a cabo. Responda aquí si tiene alguna pregunta.',
    done: 'Hecho: {action}.{result}',
    failed: 'No se pudo completar: {action}. {error}',
    cancelled: 'Cancelado: {action}. No se ha cambiado nada.',
    alreadyDone: 'Ya hizo esto hoy a las {time} UTC. ¿Quiere hacerlo de nuevo?',
    tappedDone: 'Ese cambio ya se hizo a las {time} UTC: {action}. No se ha cambiado nada más.',
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
    teamDone: "Notre équipe a approuvé votre demande et c'est fait : {action}.{result}",
    teamFailed: "Notre équipe a approuvé votre demande ({action}), mais elle n'a pas abouti : {error}",
    teamDeclined: "Notre équipe a examiné votre demande ({action}) et n'y donnera pas suite. Répondez ici si vous avez des questions.",
    done: "C'est fait : {action}.{result}",
    failed: "Cela n'a pas abouti : {action}. {error}",
    cancelled: "Annulé : {action}. Rien n'a été modifié.",
    alreadyDone: "Vous avez déjà fait cela aujourd'hui à {time} UTC. Le refaire ?",
    tappedDone: "Ce changement a déjà été fait à {time} UTC : {action}. Rien d'autre n'a été modifié.",
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
    teamDone: 'Unser Team hat Ihre Anfrage genehmigt und sie ist erledigt: {action}.{result}',
    teamFailed: 'Unser Team hat Ihre Anfrage genehmigt ({action}), aber sie konnte nicht ausgeführt werden: {error}',
    teamDeclined: 'Unser Team hat Ihre Anfrage geprüft ({action}) und wird sie nicht ausführen. Antworten Sie hier, wenn Sie Fragen haben.',
    done: 'Erledigt: {action}.{result}',
    failed: 'Das hat nicht geklappt: {action}. {error}',
    cancelled: 'Abgebrochen: {action}. Es wurde nichts geändert.',
    alreadyDone: 'Das haben Sie heute bereits um {time} UTC getan. Noch einmal ausführen?',
    tappedDone: 'Diese Änderung wurde bereits um {time} UTC vorgenommen: {action}. Sonst wurde nichts geändert.',
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
    teamDone: 'A nossa equipa aprovou o seu pedido e está feito: {action}.{result}',
    teamFailed: 'A nossa equipa aprovou o seu pedido ({action}), mas não foi possível concluí-lo: {error}',
    teamDeclined: 'A nossa equipa analisou o seu pedido ({action}) e não vai avançar com ele. Responda aqui se tiver alguma dúvida.',
    done: 'Feito: {action}.{result}',
    failed: 'Não foi possível concluir: {action}. {error}',
    cancelled: 'Cancelado: {action}. Nada foi alterado.',
    alreadyDone: 'Já fez isto hoje às {time} UTC. Quer fazê-lo de novo?',
    tappedDone: 'Essa alteração já foi feita às {time} UTC: {action}. Nada mais foi alterado.',
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
    teamDone: 'وافق فريقنا على طلبك وتم تنفيذه: {action}.{result}',
    teamFailed: 'وافق فريقنا على طلبك ({action})، لكنه لم يكتمل: {error}',
    teamDeclined: 'راجع فريقنا طلبك ({action}) ولن يمضي فيه. أرسل ردك هنا إن كانت لديك أي أسئلة.',
    done: 'تم: {action}.{result}',
    failed: 'لم يتم ذلك: {action}. {error}',
    cancelled: 'أُلغي: {action}. لم يتغير شيء.',
    alreadyDone: 'لقد قمت بهذا اليوم في {time} UTC. هل تريد تنفيذه مرة أخرى؟',
    tappedDone: 'تم هذا التغيير بالفعل في {time} UTC: {action}. لم يتغير شيء آخر.',
  },
};

export const wordsFor = (language: Language): ActionWords => WORDS[language];

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

const RESULT_CHARS = 300;

/**
 * What the customer is told of the team's decision on a change only a teammate may run, in the
 * customer's language (undefined: nothing to tell — not the team's, or not decided by it).
 */
export function teamDecisionText(record: {
  confirmer?: 'customer' | 'teammate' | undefined;
  confirmedBy?: { via: 'customer' | 'teammate' } | undefined;
  state: string;
  title: string;
  result?: unknown;
  error?: string | undefined;
  reason?: string | undefined;
  language?: Language | undefined;
}): string | undefined {
  if (record.confirmer !== 'teammate' || record.confirmedBy?.via === 'customer') return undefined;
  const words = WORDS[record.language ?? 'en'];
  const title = plainLine(record.title, 120);
  // By function, so a `$` in the business system's answer is text, never a replacement pattern.
  const fill = (template: string, values: Record<string, string>) => template.replace(/\{(\w+)\}/g, (marker, name: string) => values[name] ?? marker);
  if (record.state === 'done') {
    const result = typeof record.result === 'string' ? record.result.replace(/\s+/g, ' ').trim().slice(0, RESULT_CHARS) : '';
    return fill(words.teamDone, { action: title, result: result ? ` ${result}` : '' });
  }
  if (record.state === 'failed') return fill(words.teamFailed, { action: title, error: record.error ?? '—' });
  if (record.state === 'cancelled' && record.reason?.startsWith('declined by ')) return fill(words.teamDeclined, { action: title });
  return undefined;
}

/** `template` with its `{name}` markers filled (by function: a `$` in a value is text). */
export function fillWords(template: string, values: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (marker, name: string) => values[name] ?? marker);
}

/** HH:MM (UTC) of an ISO time, for the words that say when a change was made. */
export const clockOf = (iso: string): string => iso.slice(11, 16);

/**
 * The customer's own confirmed change in the service's words, for when the model can't say it
 * (or a tap comes after it ended): done, failed or cancelled; undefined for any other state.
 */
export function outcomeText(record: { state: string; title: string; result?: unknown; error?: string | undefined }, language: Language): string | undefined {
  const words = WORDS[language];
  // The tool's title is the business system's words: one plain line, as in the confirmation.
  record = { ...record, title: plainLine(record.title, 120) };
  if (record.state === 'done') {
    const result = typeof record.result === 'string' ? record.result.replace(/\s+/g, ' ').trim().slice(0, RESULT_CHARS) : '';
    return fillWords(words.done, { action: record.title, result: result ? ` ${result}` : '' });
  }
  if (record.state === 'failed') return fillWords(words.failed, { action: record.title, error: record.error ?? '—' });
  if (record.state === 'cancelled') return fillWords(words.cancelled, { action: record.title });
  return undefined;
}
