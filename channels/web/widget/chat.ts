/**
 * One visitor's conversation as the widget holds it: the session token (renewed before it
 * expires, and once on a refused call), the history read from the server, the live event
 * stream resumed from where that history ends, the outbox, and "New chat". While the service
 * is unreachable (the stream is down, or a message could not be sent) it shows "Reconnecting…";
 * when the service is back, waiting messages are resent and the history is read again. It
 * updates the panel's message list and never builds markup itself.
 */
import type { Session, WidgetApi } from './api.js';
import type { AttachmentStrings } from './attachment-strings.js';
import { uploadFile } from './attachment-upload.js';
import type { Attachments, Upload } from './attachments.js';
import { showSentAttachments } from './sent-attachments.js';
import { createEventHandlers, createQuestionButtons, createTypingIndicator, createTypingReporter } from './chat-events.js';
import { createSessionKeeper, type ConversationSwitch, type SessionKeeper } from './chat-session.js';
import { createEventStream } from './event-stream.js';
import { createConnectionState, type ConnectionState } from './chat-connection.js';
import { element } from './dom.js';
import { createHistorySync } from './chat-history.js';
import { createOutbox, type Outbox } from './outbox.js';
import type { Panel } from './panel.js';
import type { WidgetStrings } from './strings.js';
import type { VisitorStore } from './visitor-store.js';

export interface ChatOptions {
  api: WidgetApi;
  store: VisitorStore;
  session: Session;
  strings: WidgetStrings;
  panel: Panel;
  /** The composer's attachments (sent with the next message) and their words. */
  attachments: { tray: Attachments; strings: AttachmentStrings };
  /** A reply or hand-off arrived (the widget counts it as unread while closed, and previews `text`). */
  onReply(text: string): void;
  /** The service took a message of the visitor's. */
  onSent(text: string): void;
  /** The language the widget speaks, sent with each message. */
  language: string;
}

export interface Chat {
  /** Loads history and opens the event stream, once. */
  connect(): void;
  send(text: string): void;
  /** A new session for this visitor (signed in since): its token from now on, its conversation if it is another. */
  useSession(session: Session): void;
  /** Sends `text` as a message of its own (one written while the panel had no session yet). */
  queue(text: string): void;
  /** The composer holds text (true) or was emptied: reported to the service, at most once a second while typing. */
  typing(typing: boolean): void;
  newChat(): Promise<void>;
  /** Uploads an attachment with the session's token (renewed once if refused). */
  upload: Upload;
  /** Ends the conversation on this device (the site's `reset()`): nothing more is sent, read, renewed or stored. */
  end(): void;
}

const MAX_PAGE_URL_LENGTH = 2_000;
const MAX_PAGE_TITLE_LENGTH = 200;

function currentPage(): { url: string; title: string } | undefined {
  const url = `${window.location.origin}${window.location.pathname}`;
  if (!/^https?:/.test(url) || url.length > MAX_PAGE_URL_LENGTH) return undefined;
  return { url, title: document.title.slice(0, MAX_PAGE_TITLE_LENGTH) };
}

/** Sends what the composer holds with its attachments (those still uploading: once they are up). */
function sendComposed(
  text: string,
  context: Pick<ChatOptions, 'panel' | 'strings' | 'attachments'> & { maxChars: number | undefined; outbox: Outbox },
  onSending: () => void,
): void {
  const { panel, strings, outbox, maxChars } = context;
  const trimmed = text.trim();
  const { tray } = context.attachments;
  const uploading = tray.uploading();
  if (trimmed === '' && !tray.ready() && !uploading) return;
  if (maxChars !== undefined && trimmed.length > maxChars) {
    panel.setComposerError(strings.tooLong(maxChars));
    return;
  }
  panel.setComposerError(undefined);
  panel.clearInput();
  onSending();
  if (!uploading) {
    outbox.enqueue(trimmed, tray.take());
    return;
  }
  // In the log at once (muted, with the files' progress), sent once they are up: never refused, never hidden.
  const progress = element('progress', { className: 'upload-progress', attributes: { max: '100', value: '0', 'aria-label': strings.waitingForUpload } });
  const files = tray.handOver((fraction) => {
    progress.value = Math.round(fraction * 100);
  });
  outbox.enqueueUploading(trimmed, files, progress);
}

/** The chat's outbox: each message sent with the page and the widget's language, under the session's token; `onBack`: one got through. */
function createChatOutbox(options: ChatOptions, keeper: SessionKeeper, connection: ConnectionState, onBack: () => void): Outbox {
  const { api, panel, strings } = options;
  const list = panel.list;
  return createOutbox({
    strings,
    addBubble: (text) => list.addOutgoing(text),
    showAttachments: (bubble, attachments, textless) => showSentAttachments(bubble.element, attachments, textless, strings),
    send: (message) => {
      const page = currentPage();
      const sent = { ...message, language: options.language, ...(page ? { page } : {}) };
      // A conversation the visitor wrote in is followed on every page from now on (idle visitors open no stream).
      options.store.follow(keeper.current().conversationId);
      return keeper.authorized((token) => api.sendMessage(token, sent));
    },
    onTooLong(text, maxChars) {
      panel.restoreInput(text);
      panel.setComposerError(strings.tooLong(maxChars ?? keeper.current().site.maxMessageChars));
    },
    onPaused: (seconds) => panel.setComposerError(seconds === undefined ? undefined : strings.rateLimited(seconds)),
    onSent: options.onSent,
    onUnreachable(unreachable) {
      connection.setSendingBlocked(unreachable);
      if (!unreachable) onBack();
    },
  });
}

/** The live event stream: its events drawn in the log, the history read again on reconnecting, the outbox resumed once the service is back. */
function createChatStream(
  options: ChatOptions,
  keeper: SessionKeeper,
  parts: {
    connection: ConnectionState;
    questions: ReturnType<typeof createQuestionButtons>;
    setTyping: (visible: boolean) => void;
    outbox: Outbox;
    history: ReturnType<typeof createHistorySync>;
  },
) {
  const { api, panel, strings } = options;
  const { connection, questions, setTyping, outbox, history } = parts;
  const resync = history.resync;
  return createEventStream({
    url: (lastEventId) => api.eventsUrl(keeper.current().token, lastEventId),
    onEvent: createEventHandlers({
      list: panel.list,
      panel,
      strings,
      questions,
      setTyping,
      ownMessage: outbox.seen,
      onReply: options.onReply,
      resync: () => void resync(),
    }),
    onReconnected: () => void resync(),
    renew: async () => {
      await keeper.renew();
    },
    onConnectionChange(up) {
      connection.setStreamDown(!up);
      if (up) {
        // The first history read may have failed while the service was down.
        if (!history.loaded()) void resync();
        outbox.resume();
      } else {
        // Nobody can be typing for a visitor the service cannot reach.
        setTyping(false);
      }
    },
  });
}

/** Another tab started a new chat or renewed the session (until this chat `ended`): this one follows it. */
function followOtherTabs(
  store: VisitorStore,
  keeper: SessionKeeper,
  ended: () => boolean,
  switchConversation: (next: ConversationSwitch, existing: boolean) => void,
): void {
  store.onChange((stored) => {
    const session = keeper.current();
    if (ended() || !stored.token || stored.token === session.token) return;
    if (stored.conversationId && stored.conversationId !== session.conversationId) {
      switchConversation({ token: stored.token, conversationId: stored.conversationId, expiresAt: undefined }, true);
    } else {
      keeper.update({ token: stored.token });
    }
  });
}

export function createChat(options: ChatOptions): Chat {
  const { api, store, strings, panel } = options;
  const list = panel.list;
  let connected = false;
  // Best effort: a lost report only means the service answers without waiting.
  const typingReports = createTypingReporter((typing) => void authorized((token) => api.reportTyping(token, typing)));
  const connection = createConnectionState(panel);

  const keeper = createSessionKeeper(api, store, options.session, (next) => switchConversation(next, true));
  const authorized = keeper.authorized;
  const setTyping = createTypingIndicator(list);
  const questions = createQuestionButtons(list, strings.choicesLabel, (choice) => {
    connect();
    outbox.enqueue(choice.label, [], choice.id);
    // The used button is disabled now: focus goes on to the message box (never to the page, where Escape would no longer close the panel).
    panel.input.focus();
  });

  const history = createHistorySync({
    read: () => authorized((token) => api.history(token)),
    unconfirmed: (ids) => outbox.unconfirmed(ids),
    list,
    questions,
    panel,
  });
  const resync = history.resync;

  /** Switches to another conversation: empties the log and drops unsent messages. */
  const switchConversation = (next: ConversationSwitch, existing: boolean): void => {
    keeper.update(next);
    outbox.clear();
    // Uploads belong to the conversation they were made in.
    options.attachments.tray.clear();
    list.replace([], []);
    panel.setHolder({ kind: 'assistant' });
    setTyping(false);
    if (!connected) return;
    // A conversation another tab already started has history; a brand-new one has none.
    if (existing) void resync().then((position) => stream.connect(position));
    else stream.connect(undefined);
  };

  // A message got through: the service is back, so the stream need not wait out its backoff.
  const outbox = createChatOutbox(options, keeper, connection, () => stream.retryNow());

  const stream = createChatStream(options, keeper, { connection, questions, setTyping, outbox, history });
  let ended = false;
  followOtherTabs(store, keeper, () => ended, switchConversation);

  connection.watchOnline(() => {
    outbox.resume();
    stream.retryNow();
  });

  // "Try again" under the apology for a message the service gave up on: the same words, sent anew.
  list.onRetry((id) => {
    const text = outbox.textOf(id) ?? list.visitorText(id);
    if (text) outbox.enqueue(text);
  });

  const connect = (): void => {
    if (connected) return;
    connected = true;
    void resync().then((position) => stream.connect(position));
  };

  return {
    connect,
    typing: typingReports.report,
    useSession(session) {
      if (session.conversationId === keeper.current().conversationId) keeper.update({ token: session.token, expiresAt: session.expiresAt });
      else switchConversation(session, true);
      keeper.save();
    },
    queue: (text) => (connect(), outbox.enqueue(text)),
    send(text) {
      // A typed message answers (or passes over) any open question: its buttons go stale.
      questions.closeOpen();
      sendComposed(text, { ...options, maxChars: keeper.current().site.maxMessageChars, outbox }, () => {
        // The message ends the typing it was (the service sees it arrive after the last report).
        typingReports.ended();
        connect();
      });
    },
    end() {
      ended = true;
      keeper.end();
      stream.close();
      outbox.clear();
      options.attachments.tray.clear();
      connection.setStreamDown(false);
    },
    upload: (file, onProgress, signal) => authorized((token) => uploadFile(api.uploadUrl(file.name), token, file, onProgress, signal)),
    async newChat() {
      const result = await authorized((token) => api.newChat(token));
      if (!result.ok) {
        list.addNotice(navigator.onLine ? strings.failed : strings.offline);
        return;
      }
      switchConversation(result.value, false);
      keeper.save();
      panel.setComposerError(undefined);
      panel.focusInitial();
    },
  };
}
