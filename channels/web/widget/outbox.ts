/**
 * The visitor's outgoing messages, sent one at a time in the order typed. Each keeps its
 * clientMessageId for life, so a retry (after a 429's wait, a lost connection, or the
 * visitor's "Retry") can never create a second turn. While the server asks to slow down,
 * nothing is sent before its Retry-After has passed. A message the service could not be
 * reached for (no answer, or a 5xx) waits at the head of the queue and is resent by itself,
 * with backoff and as soon as the chat says the service is back, in a muted state ("Not sent yet"
 * for no answer, "There was a problem sending this" for a 5xx: the service is reachable, so the
 * chat does not say it is reconnecting). Once it has waited `GIVE_UP_MS` it and every message
 * queued behind it turn red ("Not sent", with Retry to try at once) but are still resent by
 * themselves, in order, and turn "Sent" when the service takes them. A definitive refusal (a 4xx)
 * is red at once and not resent by itself; with several refused, one "Send all" sends them again in order.
 * A message the event stream shows answered before its send's answer arrived is "Sent" (and told
 * once) then; that later answer only records its id, and a failure in it changes nothing.
 */
import type { AcceptedMessage, ApiResult } from './api.js';
import type { SentAttachment } from './sent-attachments.js';
import type { OutgoingBubble } from './message-list.js';
import type { WidgetStrings } from './strings.js';

export interface OutboxOptions {
  strings: WidgetStrings;
  addBubble(text: string): OutgoingBubble;
  /** Draws a message's attachments on its bubble (`textless`: it has no words). */
  showAttachments(bubble: OutgoingBubble, attachments: readonly SentAttachment[], textless: boolean): void;
  send(message: { clientMessageId: string; text: string; attachments?: string[]; choice?: string }): Promise<ApiResult<AcceptedMessage>>;
  /** The server refused the text as too long; the bubble is already gone. */
  onTooLong(text: string, maxChars: number | undefined): void;
  /** The service took the message `text` (once per message). */
  onSent(text: string): void;
  /** Sending is paused for `seconds`; undefined when it resumes. */
  onPaused(seconds: number | undefined): void;
  /** Sending waits for the service to be reachable again (`true`), or no longer does. */
  onUnreachable(unreachable: boolean): void;
}

export interface Outbox {
  enqueue(text: string, attachments?: readonly SentAttachment[], choice?: string): void;
  /**
   * A message sent while its files upload: a muted bubble at once ("Waiting for the upload…",
   * with `progress` under it), first in line behind the messages before it; sent once `files` resolves.
   */
  enqueueUploading(text: string, files: Promise<readonly SentAttachment[]>, progress: HTMLElement): void;
  /**
   * The event stream showed our message `messageId` or an answer to it: one whose send has not
   * answered yet (or waits to be resent) is "Sent" now, before that answer is shown. True when it is ours.
   */
  seen(messageId: string): boolean;
  /** The text of our message `messageId`, while the outbox holds it. */
  textOf(messageId: string): string | undefined;
  /** Bubbles of messages the given history does not contain yet; forgets the ones it does. */
  unconfirmed(historyIds: ReadonlySet<string>): OutgoingBubble[];
  clear(): void;
  /** The service is reachable again: resend a message waiting for it now. */
  resume(): void;
}

interface Outgoing {
  clientMessageId: string;
  text: string;
  /** Uploaded file ids the message names. */
  attachments: string[];
  /** A tapped choice's id. */
  choice?: string;
  bubble: OutgoingBubble;
  /** `held`: its files are still uploading (nothing behind it is sent). */
  state: 'held' | 'queued' | 'sending' | 'sent' | 'failed';
  messageId?: string;
  /** Waited past GIVE_UP_MS: red, and still resent by itself. */
  overdue?: boolean;
  /** When it first could not reach the service (cleared when it is sent, or retried by the visitor). */
  waitingSince?: number;
}

const DEFAULT_RETRY_AFTER_SECONDS = 5;
// Between resends while the service is unreachable; the chat also resumes as soon as its
// event stream reconnects or the browser comes back online.
const RESEND_DELAYS_MS = [1_000, 2_000, 4_000, 8_000, 15_000];
/** How long a message waits for the service before the outbox gives up on it (red, with Retry). */
const GIVE_UP_MS = 120_000;

/** No answer, or an answer saying the service itself is failing: the same message may succeed later. */
const isTransient = (result: ApiResult<AcceptedMessage>): boolean => !result.ok && (result.kind === 'network' || result.status >= 500 || result.status === 408);

function newClientMessageId(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  // randomUUID exists only on secure (https) pages; build the same version-4 UUID by hand.
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const newEntry = (options: OutboxOptions, text: string, choice: string | undefined): Outgoing => ({
  clientMessageId: newClientMessageId(),
  text,
  attachments: [],
  ...(choice ? { choice } : {}),
  bubble: options.addBubble(text),
  state: 'queued',
});

/** Its files drawn on its bubble and named in the message: ready to send. */
function attachFiles(options: OutboxOptions, entry: Outgoing, attachments: readonly SentAttachment[]): void {
  options.showAttachments(entry.bubble, attachments, entry.text === '');
  entry.attachments = attachments.map((attachment) => attachment.id);
  entry.state = 'queued';
  entry.bubble.setState('pending');
}

/** Waiting past GIVE_UP_MS: every message still queued is red "Not sent" with Retry (and is still resent by itself). */
function markOverdue(entries: readonly Outgoing[], strings: WidgetStrings, onRetry: () => void): void {
  for (const entry of entries) {
    if (entry.state !== 'queued' || entry.overdue) continue;
    entry.overdue = true;
    entry.bubble.setState('failed', { reason: strings.notSent, onRetry });
  }
}

/** Refused messages: red "Not sent"; one has Retry, several one "Send all" under the newest (`sendAgain`). */
function showRefused(entries: readonly Outgoing[], strings: WidgetStrings, sendAgain: () => void): void {
  const refused = entries.filter((entry) => entry.state === 'failed');
  refused.forEach((entry, index) =>
    entry.bubble.setState('failed', {
      reason: strings.notSent,
      ...(index === refused.length - 1 ? { onRetry: sendAgain, retryLabel: refused.length > 1 ? strings.sendAll : strings.retry } : {}),
    }),
  );
}

/** The refused messages queued again, in order, after those still waiting (as if typed now). */
function requeueRefused(entries: readonly Outgoing[]): Outgoing[] {
  const again = entries.filter((entry) => entry.state === 'failed');
  for (const entry of again) {
    entry.state = 'queued';
    entry.waitingSince = undefined;
    entry.bubble.setState('pending');
  }
  return [...entries.filter((entry) => !again.includes(entry)), ...again];
}

/**
 * Whether the head message waits for the service (nothing else is sent until `resume()` or its
 * timer, with backoff), and telling the chat when that means the service does not answer.
 */
/** A 429's wait: nothing is sent until it ends, then `onEnd` sends again. */
function createSendPause(onPaused: (seconds: number | undefined) => void, onEnd: () => void) {
  let until = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  return {
    active: () => Date.now() < until,
    start(seconds: number) {
      until = Date.now() + seconds * 1000;
      onPaused(seconds);
      clearTimeout(timer);
      timer = setTimeout(() => {
        onPaused(undefined);
        onEnd();
      }, seconds * 1000);
    },
    clear() {
      until = 0;
      clearTimeout(timer);
      onPaused(undefined);
    },
  };
}

function createServiceWait(onUnreachable: (unreachable: boolean) => void, pump: () => void) {
  let unreachable = false;
  let reported = false;
  let resends = 0;
  let resendTimer: ReturnType<typeof setTimeout> | undefined;
  const resume = (): void => {
    clearTimeout(resendTimer);
    if (!unreachable) return;
    resendTimer = undefined;
    pump();
  };
  return {
    resume,
    set(next: boolean, serviceFailing = false): void {
      if (!next) {
        resends = 0;
        clearTimeout(resendTimer);
      }
      unreachable = next;
      // "Reconnecting…" is for a service that does not answer; one that answers with an error (a 5xx) is reachable.
      const report = next && !serviceFailing;
      if (reported === report) return;
      reported = report;
      onUnreachable(report);
    },
    resendLater(): void {
      const delay = RESEND_DELAYS_MS[Math.min(resends, RESEND_DELAYS_MS.length - 1)] ?? 1_000;
      resends += 1;
      clearTimeout(resendTimer);
      resendTimer = setTimeout(resume, delay * (0.75 + Math.random() / 2));
    },
    /** Waiting for the resend timer: only it (or `resume()`) sends. */
    resendPending: (): boolean => unreachable && resendTimer !== undefined,
    /** Resumed: the head is being tried again. */
    resending: (): boolean => unreachable && resendTimer === undefined,
  };
}

export function createOutbox(options: OutboxOptions): Outbox {
  const { strings } = options;
  let entries: Outgoing[] = [];
  let sending = false;
  const paused = createSendPause(options.onPaused, () => void pump());
  const wait = createServiceWait(options.onUnreachable, () => void pump());
  const { resume } = wait;
  const entryOf = (messageId: string) => entries.find((entry) => entry.messageId === messageId || entry.clientMessageId === messageId);
  const setUnreachable = wait.set;

  /**
   * Keeps `entry` first in line and tries it again later: muted, or (waiting past GIVE_UP_MS) red
   * with Retry, it and every message queued behind it (none goes out of order); resent by itself either way.
   */
  const waitForService = (entry: Outgoing, serviceFailing: boolean): void => {
    entry.state = 'queued';
    entry.waitingSince ??= Date.now();
    // First, so the line below the bubble is brought into view in the log as it then is.
    setUnreachable(true, serviceFailing);
    if (Date.now() - entry.waitingSince >= GIVE_UP_MS) markOverdue(entries, strings, retryOverdue);
    else entry.bubble.setState('waiting', { reason: serviceFailing ? strings.sendTrouble : strings.notSentYet });
    wait.resendLater();
  };

  /** Retry under a message waiting past GIVE_UP_MS: muted again while it (and those behind it) are tried now. */
  const retryOverdue = (): void => {
    for (const other of entries.filter((candidate) => candidate.overdue)) {
      other.overdue = false;
      other.bubble.setState('waiting', { reason: strings.notSentYet });
    }
    resume();
  };
  /** Refused (a 4xx): red, with Retry (or Send all) under the newest refused message. */
  const fail = (entry: Outgoing): void => {
    entry.state = 'failed';
    showRefused(entries, strings, () => {
      entries = requeueRefused(entries);
      void pump();
    });
  };

  /** The service took `entry` (its send answered, or the stream showed it answered first): "Sent", told once. */
  const taken = (entry: Outgoing): void => {
    if (entry.state === 'sent') return;
    setUnreachable(false);
    entry.state = 'sent';
    entry.overdue = false;
    entry.bubble.setState('sent');
    options.onSent(entry.text);
  };

  const settle = (entry: Outgoing, result: ApiResult<AcceptedMessage>): void => {
    // Seen taken on the stream already: a late failure changes nothing (a resend would be deduplicated anyway).
    if (entry.state === 'sent' && !result.ok) return;
    // Any answer but a failing service's means it is reachable again.
    if (!isTransient(result)) setUnreachable(false);
    if (result.ok) {
      entry.messageId = result.value.messageId;
      taken(entry);
    } else if (isTransient(result)) {
      waitForService(entry, result.kind === 'status');
    } else if (result.kind === 'status' && result.status === 429) {
      entry.state = 'queued';
      paused.start(Math.ceil(result.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS));
    } else if (result.kind === 'status' && result.status === 413) {
      entries = entries.filter((other) => other !== entry);
      entry.bubble.element.remove();
      options.onTooLong(entry.text, result.maxChars);
    } else {
      fail(entry);
    }
  };

  const pump = async (): Promise<void> => {
    // While waiting for the service, only resume() (or its timer) sends, so order is kept.
    if (sending || paused.active() || wait.resendPending()) return;
    const entry = entries.find((candidate) => candidate.state === 'queued' || candidate.state === 'held');
    if (entry?.state === 'held') return;
    if (!entry) {
      // What waited turned out to be in the history already: nothing is waiting any more.
      if (wait.resending()) setUnreachable(false);
      return;
    }
    sending = true;
    entry.state = 'sending';
    const { clientMessageId, text, attachments, choice } = entry;
    const result = await options.send({ clientMessageId, text, ...(attachments.length > 0 ? { attachments } : {}), ...(choice ? { choice } : {}) });
    sending = false;
    // A new chat may have cleared the outbox while this was in flight.
    if (entries.includes(entry)) settle(entry, result);
    void pump();
  };

  return {
    enqueue(text, attachments = [], choice) {
      const entry = newEntry(options, text, choice);
      entries.push(entry);
      attachFiles(options, entry, attachments);
      void pump();
    },
    enqueueUploading(text, files, progress) {
      const entry = newEntry(options, text, undefined);
      entries.push(entry);
      entry.state = 'held';
      entry.bubble.setState('waiting', { reason: strings.waitingForUpload, progress });
      void files.then((attachments) => {
        // Unless a new chat dropped it meanwhile; with no words and its only file failed (back in the tray), nothing is left to send.
        if (!entries.includes(entry)) return;
        if (attachments.length > 0 || entry.text !== '') attachFiles(options, entry, attachments);
        else {
          entries = entries.filter((other) => other !== entry);
          entry.bubble.element.remove();
        }
        void pump();
      });
    },
    seen(messageId) {
      const entry = entryOf(messageId);
      // Its send not answered yet (or answered with a failure): the service took it all the same.
      if (entry?.state === 'sending' || entry?.state === 'queued') {
        taken(entry);
        void pump();
      }
      return !!entry;
    },
    textOf: (messageId) => entryOf(messageId)?.text,
    unconfirmed(historyIds) {
      // The service names a visitor's message by its clientMessageId: one it took before the
      // answer was lost is confirmed by the history too.
      entries = entries.filter((entry) => !historyIds.has(entry.messageId ?? entry.clientMessageId));
      return entries.map((entry) => entry.bubble);
    },
    clear() {
      entries = [];
      paused.clear();
      setUnreachable(false);
    },
    resume,
  };
}
