/**
 * The widget's own words in each language it speaks. Message text comes from the server and is
 * never looked up here. Adding a language adds one entry to `catalogues`; the chosen language
 * is the site's `language` setting when it sets one, else the browser's (`navigator.languages`),
 * else English.
 */

export interface WidgetStrings {
  openChat: string;
  closeChat: string;
  newChat: string;
  send: string;
  inputLabel: string;
  placeholder: string;
  conversationLabel: string;
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
  /** Issue 29: the launcher before a session, message states in words, a slow turn, a failed one, "New chat" confirmed. */
  connecting: string;
  sending: string;
  sent: string;
  stillWorking: string;
  tryAgain: string;
  confirmNewChat: string;
  cancel: string;
}

const english: WidgetStrings = {
  openChat: 'Open chat',
  closeChat: 'Close chat',
  newChat: 'New chat',
  send: 'Send',
  inputLabel: 'Your message',
  placeholder: 'Type your message…',
  conversationLabel: 'Conversation',
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
  connecting: 'Connecting…',
  sending: 'Sending…',
  sent: 'Sent',
  stillWorking: 'Still working on it…',
  tryAgain: 'Try again',
  confirmNewChat: 'Start a new chat? This conversation will be cleared.',
  cancel: 'Cancel',
};

const spanish: WidgetStrings = {
  openChat: 'Abrir chat',
  closeChat: 'Cerrar chat',
  newChat: 'Nuevo chat',
  send: 'Enviar',
  inputLabel: 'Tu mensaje',
  placeholder: 'Escribe tu mensaje…',
  conversationLabel: 'Conversación',
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
  connecting: 'Conectando…',
  sending: 'Enviando…',
  sent: 'Enviado',
  stillWorking: 'Seguimos en ello…',
  tryAgain: 'Reintentar',
  confirmNewChat: '¿Empezar un chat nuevo? Se borrará esta conversación.',
  cancel: 'Cancelar',
};

const french: WidgetStrings = {
  openChat: 'Ouvrir le chat',
  closeChat: 'Fermer le chat',
  newChat: 'Nouveau chat',
  send: 'Envoyer',
  inputLabel: 'Votre message',
  placeholder: 'Écrivez votre message…',
  conversationLabel: 'Conversation',
  visitorPrefix: 'Vous :',
  you: 'Vous',
  talkingToAssistant: 'Vous discutez avec notre assistant',
  talkingToTeammate: (name, team) => (team ? `Vous discutez avec ${name} (${team})` : `Vous discutez avec ${name}`),
  typing: (name) => `${name} écrit…`,
  unread: (count) => (count === 1 ? '1 nouveau message' : `${count} nouveaux messages`),
  handoff: (team) => `Conversation transmise à ${team || 'notre équipe'}. Vous aurez bientôt une réponse.`,
  tooLong: (maxChars) => (maxChars === undefined ? 'Message trop long.' : `Message trop long : ${maxChars} caractères au plus.`),
  rateLimited: (seconds) => `Vous envoyez trop vite. Nouvel envoi dans ${seconds} s.`,
  offline: 'Vous êtes hors ligne. Vérifiez votre connexion.',
  reconnecting: 'Reconnexion…',
  notSent: 'Non envoyé.',
  notSentYet: 'Pas encore envoyé. Il partira dès le retour de la connexion.',
  retry: 'Réessayer',
  failed: 'Désolé, une erreur est survenue. Réessayez.',
  unavailable: 'Le chat est indisponible pour le moment. Réessayez plus tard.',
  characterCount: (used, maxChars) => `${used} / ${maxChars}`,
  connecting: 'Connexion…',
  sending: 'Envoi…',
  sent: 'Envoyé',
  stillWorking: 'Nous y travaillons encore…',
  tryAgain: 'Réessayer',
  confirmNewChat: 'Commencer un nouveau chat ? Cette conversation sera effacée.',
  cancel: 'Annuler',
};

const german: WidgetStrings = {
  openChat: 'Chat öffnen',
  closeChat: 'Chat schließen',
  newChat: 'Neuer Chat',
  send: 'Senden',
  inputLabel: 'Ihre Nachricht',
  placeholder: 'Nachricht schreiben…',
  conversationLabel: 'Unterhaltung',
  visitorPrefix: 'Sie:',
  you: 'Sie',
  talkingToAssistant: 'Sie chatten mit unserem Assistenten',
  talkingToTeammate: (name, team) => (team ? `Sie chatten mit ${name} (${team})` : `Sie chatten mit ${name}`),
  typing: (name) => `${name} schreibt…`,
  unread: (count) => (count === 1 ? '1 neue Nachricht' : `${count} neue Nachrichten`),
  handoff: (team) => `An ${team || 'unser Team'} übergeben. Wir melden uns bei Ihnen.`,
  tooLong: (maxChars) => (maxChars === undefined ? 'Die Nachricht ist zu lang.' : `Die Nachricht ist zu lang: höchstens ${maxChars} Zeichen.`),
  rateLimited: (seconds) => `Sie senden zu schnell. Erneuter Versand in ${seconds} s.`,
  offline: 'Sie sind offline. Prüfen Sie Ihre Verbindung.',
  reconnecting: 'Verbinde erneut…',
  notSent: 'Nicht gesendet.',
  notSentYet: 'Noch nicht gesendet. Wird gesendet, sobald die Verbindung zurück ist.',
  retry: 'Erneut senden',
  failed: 'Leider ist etwas schiefgelaufen. Bitte versuchen Sie es erneut.',
  unavailable: 'Der Chat ist gerade nicht erreichbar. Bitte versuchen Sie es später.',
  characterCount: (used, maxChars) => `${used} / ${maxChars}`,
  connecting: 'Verbinde…',
  sending: 'Wird gesendet…',
  sent: 'Gesendet',
  stillWorking: 'Wir arbeiten noch daran…',
  tryAgain: 'Erneut versuchen',
  confirmNewChat: 'Neuen Chat beginnen? Diese Unterhaltung wird gelöscht.',
  cancel: 'Abbrechen',
};

const portuguese: WidgetStrings = {
  openChat: 'Abrir chat',
  closeChat: 'Fechar chat',
  newChat: 'Novo chat',
  send: 'Enviar',
  inputLabel: 'A sua mensagem',
  placeholder: 'Escreva a sua mensagem…',
  conversationLabel: 'Conversa',
  visitorPrefix: 'Você:',
  you: 'Você',
  talkingToAssistant: 'Está a falar com o nosso assistente',
  talkingToTeammate: (name, team) => (team ? `Está a falar com ${name} (${team})` : `Está a falar com ${name}`),
  typing: (name) => `${name} está a escrever…`,
  unread: (count) => (count === 1 ? '1 mensagem nova' : `${count} mensagens novas`),
  handoff: (team) => `Conversa passada a ${team || 'nossa equipa'}. Entraremos em contacto.`,
  tooLong: (maxChars) => (maxChars === undefined ? 'A mensagem é demasiado longa.' : `A mensagem é demasiado longa: no máximo ${maxChars} caracteres.`),
  rateLimited: (seconds) => `Está a enviar depressa demais. Novo envio em ${seconds} s.`,
  offline: 'Está sem ligação. Verifique a sua ligação.',
  reconnecting: 'A ligar de novo…',
  notSent: 'Não enviada.',
  notSentYet: 'Ainda não enviada. Será enviada quando a ligação voltar.',
  retry: 'Reenviar',
  failed: 'Lamentamos, algo correu mal. Tente de novo.',
  unavailable: 'O chat não está disponível agora. Tente mais tarde.',
  characterCount: (used, maxChars) => `${used} / ${maxChars}`,
  connecting: 'A ligar…',
  sending: 'A enviar…',
  sent: 'Enviada',
  stillWorking: 'Ainda estamos a tratar disso…',
  tryAgain: 'Tentar de novo',
  confirmNewChat: 'Começar um novo chat? Esta conversa será apagada.',
  cancel: 'Cancelar',
};

const arabic: WidgetStrings = {
  openChat: 'فتح المحادثة',
  closeChat: 'إغلاق المحادثة',
  newChat: 'محادثة جديدة',
  send: 'إرسال',
  inputLabel: 'رسالتك',
  placeholder: 'اكتب رسالتك…',
  conversationLabel: 'المحادثة',
  visitorPrefix: 'أنت:',
  you: 'أنت',
  talkingToAssistant: 'أنت تتحدث مع مساعدنا',
  talkingToTeammate: (name, team) => (team ? `أنت تتحدث مع ${name} (${team})` : `أنت تتحدث مع ${name}`),
  typing: (name) => `${name} يكتب…`,
  unread: (count) => (count === 1 ? 'رسالة جديدة' : `${count} رسائل جديدة`),
  handoff: (team) => `تم تحويل المحادثة إلى ${team || 'فريقنا'}. سيتواصلون معك.`,
  tooLong: (maxChars) => (maxChars === undefined ? 'الرسالة طويلة جدًا.' : `الرسالة طويلة جدًا: ${maxChars} حرفًا كحد أقصى.`),
  rateLimited: (seconds) => `أنت ترسل بسرعة كبيرة. سيُعاد الإرسال بعد ${seconds} ث.`,
  offline: 'أنت غير متصل. تحقق من اتصالك.',
  reconnecting: 'جارٍ إعادة الاتصال…',
  notSent: 'لم تُرسل.',
  notSentYet: 'لم تُرسل بعد. ستُرسل عند عودة الاتصال.',
  retry: 'إعادة الإرسال',
  failed: 'عذرًا، حدث خطأ. حاول مرة أخرى.',
  unavailable: 'المحادثة غير متاحة الآن. حاول لاحقًا.',
  characterCount: (used, maxChars) => `${used} / ${maxChars}`,
  connecting: 'جارٍ الاتصال…',
  sending: 'جارٍ الإرسال…',
  sent: 'أُرسلت',
  stillWorking: 'ما زلنا نعمل على ذلك…',
  tryAgain: 'حاول مرة أخرى',
  confirmNewChat: 'بدء محادثة جديدة؟ سيتم مسح هذه المحادثة.',
  cancel: 'إلغاء',
};

const catalogues = new Map<string, WidgetStrings>([
  ['en', english],
  ['es', spanish],
  ['fr', french],
  ['de', german],
  ['pt', portuguese],
  ['ar', arabic],
]);

/** Languages written right to left (the widget's own words; each message's direction follows its text). */
export const isRightToLeft = (language: string): boolean => /^(ar|he|fa|ur)$/.test(language);

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
