/**
 * The widget's own words. Message text comes from the server and is never looked up here. The
 * script carries English; another language's catalogue (the same keys, templates naming their
 * values in braces) is fetched from the service when the widget speaks it
 * (`channels/web/widget-catalogues.ts`, served at `/widget/i18n/<language>.json`), a missing key
 * staying English. The language is the site's `language` setting when it sets one, else the
 * browser's (`navigator.languages`), else English.
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
  /** Under a message the service answered with an error (a 5xx): it is being sent again. */
  sendTrouble: string;
  /** Under a message sent while its attachment uploads (muted, with the upload's progress). */
  waitingForUpload: string;
  /** The panel's banner while the service could not be reached since the page loaded: messages wait. */
  offlineQueued: string;
  /** A sent photo's button ("View photo {name}") and its viewer's close button. */
  viewPhoto: string;
  closeViewer: string;
  /** The viewer's link saving the photo. */
  downloadPhoto: string;
  /** The greeting of a panel opened offline before any session told the widget the site's own. */
  hello: string;
  retry: string;
  /** Under the newest of several refused messages: sends them all again, in order. */
  sendAll: string;
  failed: string;
  unavailable: string;
  characterCount(used: number, maxChars: number): string;
  /** The launcher before a session, message states in words, a slow turn, a failed one, "New chat" confirmed. */
  connecting: string;
  sending: string;
  sent: string;
  stillWorking: string;
  tryAgain: string;
  confirmNewChat: string;
  cancel: string;
  startOver: string;
}

/** English, and the keys every catalogue has. */
export const ENGLISH = {
  openChat: 'Open chat',
  closeChat: 'Close chat',
  newChat: 'New chat',
  send: 'Send',
  inputLabel: 'Your message',
  placeholder: 'Type your message…',
  conversationLabel: 'Conversation',
  choicesLabel: 'Answers',
  you: 'You',
  talkingToAssistant: "You're chatting with our assistant",
  talkingToTeammate: "You're chatting with {name} from {team}",
  talkingToPerson: "You're chatting with {name}",
  typing: '{name} is typing…',
  unreadOne: '1 new message',
  unreadMany: '{count} new messages',
  handoff: 'Handed over to {team}. They will get back to you.',
  handoffTeam: 'Handed over to our team. They will get back to you.',
  tooLong: 'That message is too long. Please keep it to {max} characters or fewer.',
  tooLongAny: 'That message is too long. Please shorten it.',
  rateLimited: "You're sending messages too quickly. Sending again in {seconds} s.",
  offline: "You're offline. Check your connection and try again.",
  reconnecting: 'Reconnecting…',
  notSent: 'Not sent.',
  notSentYet: 'Not sent yet. It will be sent when the connection is back.',
  sendTrouble: 'There was a problem sending this. Trying again…',
  waitingForUpload: 'Waiting for the upload…',
  offlineQueued: "We'll send your message when we're back.",
  hello: 'Hi! How can we help?',
  closeViewer: 'Close photo',
  downloadPhoto: 'Download',
  viewPhoto: 'View photo {name}',
  retry: 'Retry',
  sendAll: 'Send all',
  failed: 'Sorry, something went wrong. Please try again.',
  unavailable: 'Chat is unavailable right now. Please try again later.',
  connecting: 'Connecting…',
  sending: 'Sending…',
  sent: 'Sent',
  stillWorking: 'Still working on it…',
  tryAgain: 'Try again',
  confirmNewChat: 'Start a new chat? This conversation will be cleared.',
  cancel: 'Cancel',
  startOver: 'Start over',
  attach: 'Attach a photo or PDF',
  remove: 'Remove {name}',
  uploading: 'Uploading {name}',
  uploaded: '{name} is ready to send',
  tooBig: 'That file is too big. Files can be up to {size}.',
  tooBigAny: 'That file is too big.',
  wrongType: 'That kind of file is not supported. Send a photo (JPEG, PNG, WebP, GIF) or a PDF.',
  uploadFailed: 'The file could not be uploaded. Remove it and try again.',
  waitForUpload: 'It will be sent once the attachment has uploaded.',
  dropHere: 'Drop a photo or PDF to attach it',
  attachmentsLabel: 'Attachments',
};

export type Catalogue = typeof ENGLISH;

/** The languages the service has catalogues for. */
const LANGUAGES = ['en', 'es', 'fr', 'de', 'pt', 'ar'];

/** `template` with each `{key}` replaced by its value. */
export const fill = (template: string, values: Record<string, string | number>): string =>
  template.replace(/\{(\w+)\}/g, (_match, key: string) => String(values[key] ?? ''));

/** A catalogue from the service: its string values for known keys over English. */
export function catalogueFrom(value: unknown): Catalogue {
  const catalogue = { ...ENGLISH };
  if (typeof value !== 'object' || value === null) return catalogue;
  for (const key of Object.keys(ENGLISH) as (keyof Catalogue)[]) {
    const text = (value as Record<string, unknown>)[key];
    if (typeof text === 'string') catalogue[key] = text;
  }
  return catalogue;
}

export function stringsFrom(words: Catalogue): WidgetStrings {
  return {
    ...words,
    talkingToTeammate: (name, team) => fill(team ? words.talkingToTeammate : words.talkingToPerson, { name, team }),
    typing: (name) => fill(words.typing, { name }),
    unread: (count) => (count === 1 ? words.unreadOne : fill(words.unreadMany, { count })),
    handoff: (team) => (team ? fill(words.handoff, { team }) : words.handoffTeam),
    tooLong: (max) => (max === undefined ? words.tooLongAny : fill(words.tooLong, { max })),
    rateLimited: (seconds) => fill(words.rateLimited, { seconds }),
    characterCount: (used, max) => `${used} / ${max}`,
  };
}

/** The primary subtag of the first candidate we have words for ("es-MX" → "es"), else "en". */
export function chooseLanguage(candidates: readonly (string | undefined)[]): string {
  for (const candidate of candidates) {
    const primary = candidate?.toLowerCase().split(/[-_]/)[0];
    if (primary && LANGUAGES.includes(primary)) return primary;
  }
  return 'en';
}

/** Languages written right to left (the widget's own words; each message's direction follows its text). */
export const isRightToLeft = (language: string): boolean => /^(ar|he|fa|ur)$/.test(language);
