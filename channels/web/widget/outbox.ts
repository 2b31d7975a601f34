/**
 * The visitor's outgoing messages, sent one at a time in the order typed. Each keeps its
 * clientMessageId for life, so a retry (after a 429's wait, a lost connection, or the
 * visitor's "Retry") can never create a second turn. While the server asks to slow down,
 * nothing is sent before its Retry-After has passed.
 */
import type { AcceptedMessage, ApiResult } from './api.js';
import type { OutgoingBubble } from './message-list.js';
import type { WidgetStrings } from './strings.js';

export interface OutboxOptions {
  strings: WidgetStrings;
  addBubble(text: string): OutgoingBubble;
  send(message: { clientMessageId: string; text: string }): Promise<ApiResult<AcceptedMessage>>;
  /** The server refused the text as too long; the bubble is already gone. */
  onTooLong(text: string, maxChars: number | undefined): void;
  /** Sending is paused for `seconds`; undefined when it resumes. */
  onPaused(seconds: number | undefined): void;
}

export interface Outbox {
  enqueue(text: string): void;
  /** True when `messageId` is one of ours. */
  owns(messageId: string): boolean;
  /** Bubbles of messages the given history does not contain yet; forgets the ones it does. */
  unconfirmed(historyIds: ReadonlySet<string>): OutgoingBubble[];
  clear(): void;
}

interface Outgoing {
  clientMessageId: string;
  text: string;
  bubble: OutgoingBubble;
  state: 'queued' | 'sending' | 'sent' | 'failed';
  messageId?: string;
}

const DEFAULT_RETRY_AFTER_SECONDS = 5;

function newClientMessageId(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  // randomUUID exists only on secure (https) pages; build the same version-4 UUID by hand.
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export function createOutbox(options: OutboxOptions): Outbox {
  const { strings } = options;
  let entries: Outgoing[] = [];
  let sending = false;
  let pausedUntil = 0;
  let resumeTimer: ReturnType<typeof setTimeout> | undefined;

  const fail = (entry: Outgoing): void => {
    entry.state = 'failed';
    entry.bubble.setState('failed', {
      reason: strings.notSent,
      onRetry: () => {
        entry.state = 'queued';
        entry.bubble.setState('pending');
        // A retried message goes after those still waiting, as if typed now.
        entries = [...entries.filter((other) => other !== entry), entry];
        void pump();
      },
    });
  };

  const pause = (seconds: number): void => {
    pausedUntil = Date.now() + seconds * 1000;
    options.onPaused(seconds);
    clearTimeout(resumeTimer);
    resumeTimer = setTimeout(() => {
      options.onPaused(undefined);
      void pump();
    }, seconds * 1000);
  };

  const settle = (entry: Outgoing, result: ApiResult<AcceptedMessage>): void => {
    if (result.ok) {
      entry.state = 'sent';
      entry.messageId = result.value.messageId;
      entry.bubble.setState('sent');
    } else if (result.kind === 'status' && result.status === 429) {
      entry.state = 'queued';
      pause(Math.ceil(result.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS));
    } else if (result.kind === 'status' && result.status === 413) {
      entries = entries.filter((other) => other !== entry);
      entry.bubble.element.remove();
      options.onTooLong(entry.text, result.maxChars);
    } else {
      fail(entry);
    }
  };

  const pump = async (): Promise<void> => {
    if (sending || Date.now() < pausedUntil) return;
    const entry = entries.find((candidate) => candidate.state === 'queued');
    if (!entry) return;
    sending = true;
    entry.state = 'sending';
    const result = await options.send({ clientMessageId: entry.clientMessageId, text: entry.text });
    sending = false;
    // A new chat may have cleared the outbox while this was in flight.
    if (entries.includes(entry)) settle(entry, result);
    void pump();
  };

  return {
    enqueue(text) {
      const bubble = options.addBubble(text);
      bubble.setState('pending');
      entries.push({ clientMessageId: newClientMessageId(), text, bubble, state: 'queued' });
      void pump();
    },
    owns: (messageId) => entries.some((entry) => entry.messageId === messageId),
    unconfirmed(historyIds) {
      entries = entries.filter((entry) => !(entry.messageId && historyIds.has(entry.messageId)));
      return entries.map((entry) => entry.bubble);
    },
    clear() {
      entries = [];
      pausedUntil = 0;
      clearTimeout(resumeTimer);
      options.onPaused(undefined);
    },
  };
}
