/**
 * Widget message ids are chosen by the browser, so they are unique only within one visitor's
 * conversation. Everything the service keys by a message id (the inbox dedupe, the transcript
 * `in:`/`out:` ledger ids, the reply parts) gets the conversation's chat id in front, so two
 * visitors using the same id can never drop each other's message or read each other's reply.
 * The browser only ever sees its own id back.
 */

/** The service-side id of a widget message: `<chat id>:<client message id>`. */
export function scopedMessageId(chatId: string, clientMessageId: string): string {
  return `${chatId}:${clientMessageId}`;
}

/** The id the browser chose, from a scoped id (an unscoped one is returned as it is). */
export function clientMessageIdOf(messageId: string): string {
  return messageId.slice(messageId.lastIndexOf(':') + 1);
}
