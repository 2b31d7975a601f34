/**
 * Keeps one Server-Sent Events connection to `/api/widget/events` open and hands parsed events
 * to the chat. EventSource reconnects by itself after a dropped connection (sending
 * Last-Event-ID); when the server refuses the stream instead (an expired token answers 401 and
 * EventSource gives up), this renews the session and reconnects with backoff. It reports when
 * the connection goes down and comes back, so the chat can say it is reconnecting.
 */
import { instant, parseSender, type Sender } from './api.js';
import { parseChoices, type WidgetChoice } from './choices.js';

export type StreamEvent =
  | { type: 'typing' }
  | { type: 'delta'; messageId: string; text: string }
  | {
      type: 'message';
      id: string;
      role: 'visitor' | 'assistant';
      text: string;
      replyTo: string | undefined;
      sender: Sender;
      at: number | undefined;
      /** The service gave up on the visitor's message `replyTo`: this is its apology. */
      failed: boolean;
      /** A question's answers to show as buttons, and when they expire (ms since the epoch). */
      choices: WidgetChoice[] | undefined;
      choicesExpireAt: number | undefined;
    }
  | { type: 'handoff'; team: string; status: string | undefined }
  | { type: 'state'; holder: Sender };

export interface EventStreamOptions {
  /** The stream's address for the current token, resuming after `lastEventId` when given. */
  url(lastEventId: string | undefined): string;
  onEvent(event: StreamEvent): void;
  /** Called when a connection opens after an earlier one was lost: catch up from history. */
  onReconnected(): void;
  /** Called before reconnecting after the server refused the stream. */
  renew(): Promise<void>;
  /** The connection went down (`false`) or is open again (`true`). */
  onConnectionChange(up: boolean): void;
}

export interface EventStream {
  /** (Re)connects now, delivering only events after `fromEventId` (from the newest when undefined). */
  connect(fromEventId: string | undefined): void;
  /** The service answered something else: skip the rest of a backoff wait and reconnect now. */
  retryNow(): void;
  /** Closes the connection for good (the conversation ended on this device): `connect` does nothing after it. */
  close(): void;
}

type Json = Record<string, unknown>;
const asText = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

// One parser per event name; adding an event adds an entry.
const parsers: Record<StreamEvent['type'], (data: Json) => StreamEvent | undefined> = {
  typing: () => ({ type: 'typing' }),
  delta: (data) => {
    const messageId = asText(data.messageId);
    const text = asText(data.text);
    return messageId && text !== undefined ? { type: 'delta', messageId, text } : undefined;
  },
  message: (data) => {
    const id = asText(data.id);
    const text = asText(data.text);
    const role = data.role === 'visitor' ? 'visitor' : data.role === 'assistant' || data.role === undefined ? 'assistant' : undefined;
    return id && text !== undefined && role
      ? {
          type: 'message',
          id,
          role,
          text,
          replyTo: asText(data.replyTo),
          sender: parseSender(data.sender),
          at: instant(data.at),
          failed: data.failed === true,
          choices: parseChoices(data.choices),
          choicesExpireAt: instant(data.choicesExpireAt),
        }
      : undefined;
  },
  handoff: (data) => ({ type: 'handoff', team: asText(data.team) ?? '', status: asText(data.status) }),
  state: (data) => ({ type: 'state', holder: parseSender(data.holder) }),
};

const MAX_BACKOFF_MS = 30_000;

export function createEventStream(options: EventStreamOptions): EventStream {
  let source: EventSource | undefined;
  let lastEventId: string | undefined;
  let hasOpened = false;
  let failures = 0;
  let retryTimer: ReturnType<typeof setTimeout> | undefined;
  let retry: (() => void) | undefined;
  let up: boolean | undefined;
  let closed = false;

  const setUp = (next: boolean): void => {
    if (up === next) return;
    up = next;
    options.onConnectionChange(next);
  };

  const dispatch = (type: StreamEvent['type'], raw: string): void => {
    let data: unknown;
    try {
      data = JSON.parse(raw || '{}');
    } catch {
      return;
    }
    if (typeof data !== 'object' || data === null) return;
    const event = parsers[type](data as Json);
    if (event) options.onEvent(event);
  };

  const open = (): void => {
    source?.close();
    const current = new EventSource(options.url(lastEventId));
    source = current;
    for (const type of Object.keys(parsers) as StreamEvent['type'][]) {
      current.addEventListener(type, (event) => {
        if (!(event instanceof MessageEvent)) return;
        if (event.lastEventId) lastEventId = event.lastEventId;
        dispatch(type, String(event.data));
      });
    }
    current.addEventListener('open', () => {
      if (current !== source) return;
      failures = 0;
      setUp(true);
      if (hasOpened) options.onReconnected();
      hasOpened = true;
    });
    current.addEventListener('error', (event) => {
      if (event instanceof MessageEvent || current !== source) return;
      // Dropped (EventSource is already retrying) or refused: either way the visitor is not connected.
      setUp(false);
      if (current.readyState !== EventSource.CLOSED) return;
      // Refused rather than dropped: EventSource will not retry on its own.
      hasOpened = true;
      const delay = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** failures) * (0.75 + Math.random() / 2);
      failures += 1;
      retry = () => {
        retry = undefined;
        clearTimeout(retryTimer);
        void options.renew().finally(() => {
          if (current === source) open();
        });
      };
      retryTimer = setTimeout(retry, delay);
    });
  };

  return {
    connect(fromEventId) {
      if (closed) return;
      clearTimeout(retryTimer);
      retry = undefined;
      lastEventId = fromEventId;
      hasOpened = false;
      failures = 0;
      open();
    },
    retryNow() {
      retry?.();
    },
    close() {
      closed = true;
      clearTimeout(retryTimer);
      retry = undefined;
      source?.close();
      source = undefined;
    },
  };
}
