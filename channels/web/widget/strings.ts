/**
 * The widget's own words in each language it speaks. Message text comes from the server and is
 * never looked up here. Adding a language adds one entry to `catalogues`; the chosen language
 * is the site's `language` setting, else the browser's, else English.
 */

export interface WidgetStrings {
  openChat: string;
  closeChat: string;
  newChat: string;
  send: string;
  inputLabel: string;
  placeholder: string;
  conversationLabel: string;
  /** The label of a question's answer buttons. */
  choicesLabel: string;
  visitorPrefix: string;
  /** The visitor's own name over their messages. */
  you: string;
  /** The header's subtitle while the assistant holds the conversation. */
  talkingToAssistant: string;
  /** The header's subtitle while a teammate holds it: "You're chatting with Ana from Support". */
  talkingToTeammate(name: string, team: string): string;
  typing(name: string): string;
  unread(count: number): string;
  handoff(team: string): string;
  tooLong(maxChars: number | undefined): string;
  rateLimited(seconds: number): string;
  offline: string;
  /** The service is unreachable while the browser is online; cleared when it answers again. */
  reconnecting: string;
  notSent: string;
  /** A message that could not reach the service yet; it is resent by itself when it can. */
  notSentYet: string;
  retry: string;
  failed: string;
  unavailable: string;
  characterCount(used: number, maxChars: number): string;
}

const english: WidgetStrings = {
  openChat: 'Open chat',
  closeChat: 'Close chat',
  newChat: 'New chat',
  send: 'Send',
  inputLabel: 'Your message',
  placeholder: 'Type your message…',
  conversationLabel: 'Conversation',
  choicesLabel: 'Answers',
  visitorPrefix: 'You:',
  you: 'You',
  talkingToAssistant: "You're chatting with our assistant",
  talkingToTeammate: (name, team) => (team ? `You're chatting with ${name} from ${team}` : `You're chatting with ${name}`),
  typing: (name) => `${name} is typing…`,
  unread: (count) => (count === 1 ? '1 new message' : `${count} new messages`),
  handoff: (team) => (team ? `Handed over to ${team}. They will get back to you.` : 'Handed over to our team. They will get back to you.'),
  tooLong: (maxChars) =>
    maxChars === undefined ? 'That message is too long. Please shorten it.' : `That message is too long. Please keep it to ${maxChars} characters or fewer.`,
  rateLimited: (seconds) => `You're sending messages too quickly. Sending again in ${seconds} s.`,
  offline: "You're offline. Check your connection and try again.",
  reconnecting: 'Reconnecting…',
  notSent: 'Not sent.',
  notSentYet: 'Not sent yet. It will be sent when the connection is back.',
  retry: 'Retry',
  failed: 'Sorry, something went wrong. Please try again.',
  unavailable: 'Chat is unavailable right now. Please try again later.',
  characterCount: (used, maxChars) => `${used} / ${maxChars}`,
};

const spanish: WidgetStrings = {
  openChat: 'Abrir chat',
  closeChat: 'Cerrar chat',
  newChat: 'Nuevo chat',
  send: 'Enviar',
  inputLabel: 'Tu mensaje',
  placeholder: 'Escribe tu mensaje…',
  conversationLabel: 'Conversación',
  choicesLabel: 'Respuestas',
  visitorPrefix: 'Tú:',
  you: 'Tú',
  talkingToAssistant: 'Estás hablando con nuestro asistente',
  talkingToTeammate: (name, team) => (team ? `Estás hablando con ${name} de ${team}` : `Estás hablando con ${name}`),
  typing: (name) => `${name} está escribiendo…`,
  unread: (count) => (count === 1 ? '1 mensaje nuevo' : `${count} mensajes nuevos`),
  handoff: (team) =>
    team ? `Conversación transferida a ${team}. Se pondrán en contacto contigo.` : 'Conversación transferida a nuestro equipo. Se pondrán en contacto contigo.',
  tooLong: (maxChars) =>
    maxChars === undefined ? 'El mensaje es demasiado largo. Acórtalo, por favor.' : `El mensaje es demasiado largo. El máximo es de ${maxChars} caracteres.`,
  rateLimited: (seconds) => `Estás enviando mensajes demasiado rápido. Se volverá a enviar en ${seconds} s.`,
  offline: 'Estás sin conexión. Revisa tu conexión e inténtalo de nuevo.',
  reconnecting: 'Reconectando…',
  notSent: 'No enviado.',
  notSentYet: 'Aún no enviado. Se enviará cuando vuelva la conexión.',
  retry: 'Reintentar',
  failed: 'Lo sentimos, algo ha fallado. Inténtalo de nuevo.',
  unavailable: 'El chat no está disponible ahora mismo. Inténtalo más tarde.',
  characterCount: (used, maxChars) => `${used} / ${maxChars}`,
};

const catalogues = new Map<string, WidgetStrings>([
  ['en', english],
  ['es', spanish],
]);

/** The primary subtag of the first candidate we have strings for ("es-MX" → "es"), else "en". */
export function chooseLanguage(candidates: readonly (string | undefined)[]): string {
  for (const candidate of candidates) {
    const primary = candidate?.toLowerCase().split(/[-_]/)[0];
    if (primary && catalogues.has(primary)) return primary;
  }
  return 'en';
}

export function stringsFor(language: string): WidgetStrings {
  return catalogues.get(language) ?? english;
}
