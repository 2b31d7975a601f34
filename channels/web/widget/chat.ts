/**
 * One visitor's conversation as the widget holds it: the session token (renewed before it
 * expires, and once on a refused call), the history read from the server, the live event
 * stream resumed from where that history ends, the outbox, and "New chat". While the service
 * is unreachable (the stream is down, or a message could not be sent) it shows "Reconnecting…";
 * when the service is back, waiting messages are resent and the history is read again. It
 * updates the panel's message list and never builds markup itself.
 */
import type { ApiResult, Session, WidgetApi } from './api.js';
import type { AttachmentStrings } from './attachment-strings.js';
import { uploadFile } from './attachment-upload.js';
import { showSentAttachments, type Attachments, type Upload } from './attachments.js';
import { createChoiceGroup, type ChoiceGroup, type WidgetChoice } from './choices.js';
import { createEventStream, type StreamEvent } from './event-stream.js';
import { createOutbox } from './outbox.js';
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
  /** The language the widget speaks, sent with each message. */
  language: string;
}

export interface Chat {
  /** Loads history and opens the event stream, once. */
  connect(): void;
  send(text: string): void;
  /** The composer holds text (true) or was emptied: reported to the service, at most once a second while typing. */
  typing(typing: boolean): void;
  newChat(): Promise<void>;
  /** Uploads an attachment with the session's token (renewed once if refused). */
  upload: Upload;
}

// A slow turn says the service is still on it; the typing indicator clears itself only if the
// reply never comes (longer than any turn's budget: the service apologises before that).
const STILL_WORKING_MS = 20_000;
const TYPING_TIMEOUT_MS = 180_000;
// Renew a little before the token expires rather than after a refusal: across origins a 401
// without CORS headers is indistinguishable from a network failure.
const RENEW_BEFORE_EXPIRY_MS = 60_000;
const MAX_PAGE_URL_LENGTH = 2_000;
const MAX_PAGE_TITLE_LENGTH = 200;
// While the visitor types, a report at most this often (the service's report stands for its quiet period, 1.5 s by default).
const TYPING_REPORT_MS = 1_000;

function currentPage(): { url: string; title: string } | undefined {
  const url = `${window.location.origin}${window.location.pathname}`;
  if (!/^https?:/.test(url) || url.length > MAX_PAGE_URL_LENGTH) return undefined;
  return { url, title: document.title.slice(0, MAX_PAGE_TITLE_LENGTH) };
}

export function createChat(options: ChatOptions): Chat {
  const { api, store, strings, panel } = options;
  const list = panel.list;
  let session = options.session;
  let connected = false;
  let renewal: Promise<boolean> | undefined;
  let typingTimer: ReturnType<typeof setTimeout> | undefined;
  /** When typing was last reported (0: not typing, or the message that ended it was sent). */
  let typingReportedAt = 0;
  let stillTimer: ReturnType<typeof setTimeout> | undefined;
  let resyncing: Promise<string | undefined> | undefined;
  let resyncAgain = false;
  let historyLoaded = false;
  // Why the service counts as unreachable: the event stream is down, or the outbox is waiting.
  let streamDown = false;
  let sendingBlocked = false;

  const updateConnection = (): void => {
    // Offline has its own banner; "Reconnecting…" is for a service that does not answer.
    panel.setReconnecting(navigator.onLine && (streamDown || sendingBlocked));
  };

  const save = (): void => store.save({ visitorId: session.visitorId, token: session.token, conversationId: session.conversationId });

  const setTyping = (visible: boolean): void => {
    clearTimeout(typingTimer);
    clearTimeout(stillTimer);
    list.setTyping(visible);
    if (!visible) return;
    typingTimer = setTimeout(() => list.setTyping(false), TYPING_TIMEOUT_MS);
    stillTimer = setTimeout(() => list.setStillWorking(true), STILL_WORKING_MS);
  };

  /** Reads the history and redraws the log with it. Resolves to the stream position it is current to. */
  const resync = (): Promise<string | undefined> => {
    if (resyncing) {
      resyncAgain = true;
      return resyncing;
    }
    resyncing = (async () => {
      let position: string | undefined;
      do {
        resyncAgain = false;
        const result = await authorized((token) => api.history(token));
        if (!result.ok) return undefined;
        const { messages, lastEventId, holder } = result.value;
        const waiting = outbox.unconfirmed(new Set(messages.map((message) => message.id)));
        list.replace(messages, waiting);
        // The questions' buttons again: the open one tappable (unless a message waiting to be sent answers it), the rest disabled.
        openChoices = undefined;
        for (const message of messages) {
          if (message.choices) showChoices(message.id, message.choices, message.choicesOpen && waiting.length === 0, message.choicesExpireAt, message.chosen);
        }
        panel.setHolder(holder);
        historyLoaded = true;
        position = lastEventId;
      } while (resyncAgain);
      return position;
    })().finally(() => {
      resyncing = undefined;
    });
    return resyncing;
  };

  /** Switches to another conversation: empties the log and drops unsent messages. */
  const switchConversation = (next: { token: string; conversationId: string; expiresAt: number | undefined }, existing: boolean): void => {
    session = { ...session, ...next };
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

  const renew = (): Promise<boolean> => {
    renewal ??= api
      .startSession({ visitorId: session.visitorId, token: session.token })
      .then((result) => {
        if (!result.ok) return false;
        const { token, conversationId, visitorId, expiresAt } = result.value;
        session = { ...session, visitorId };
        if (conversationId === session.conversationId) session = { ...session, token, expiresAt };
        else switchConversation({ token, conversationId, expiresAt }, true);
        save();
        return true;
      })
      .finally(() => {
        renewal = undefined;
      });
    return renewal;
  };

  /**
   * Calls the API with a current token. A refusal (401, or no readable answer while the
   * browser is online, which is how a cross-origin 401 looks) renews the session once and
   * retries once; the calls it wraps are safe to repeat.
   */
  const authorized = async <Value>(call: (token: string) => Promise<ApiResult<Value>>): Promise<ApiResult<Value>> => {
    if (session.expiresAt !== undefined && Date.now() > session.expiresAt - RENEW_BEFORE_EXPIRY_MS) await renew();
    const first = await call(session.token);
    if (first.ok) return first;
    const refused = first.kind === 'status' ? first.status === 401 : navigator.onLine;
    if (!refused) return first;
    return (await renew()) ? call(session.token) : first;
  };

  /** The buttons of the latest question, while they may still be used. */
  let openChoices: ChoiceGroup | undefined;
  /** Draws a question's buttons under its message: a tap answers it, as if typed; disabled when not `open`, and once `expireAt` passes. */
  const showChoices = (id: string, choices: WidgetChoice[], open: boolean, expireAt: number | undefined, chosen?: string): void => {
    const group = createChoiceGroup(choices, strings.choicesLabel, (choice) => {
      connect();
      outbox.enqueue(choice.label, [], choice.id);
    });
    list.attachUnder(id, group.element);
    if (!open) return group.disable(chosen);
    openChoices = group;
    if (expireAt !== undefined) setTimeout(group.disable, expireAt - Date.now());
  };
  const outbox = createOutbox({
    strings,
    addBubble(text, attachments) {
      const bubble = list.addOutgoing(text);
      showSentAttachments(bubble.element, attachments, text === '');
      return bubble;
    },
    send: (message) => {
      const page = currentPage();
      const sent = { ...message, language: options.language, ...(page ? { page } : {}) };
      return authorized((token) => api.sendMessage(token, sent));
    },
    onTooLong(text, maxChars) {
      panel.restoreInput(text);
      panel.setComposerError(strings.tooLong(maxChars ?? session.site.maxMessageChars));
    },
    onPaused: (seconds) => panel.setComposerError(seconds === undefined ? undefined : strings.rateLimited(seconds)),
    onUnreachable(unreachable) {
      sendingBlocked = unreachable;
      updateConnection();
      // A message got through: the service is back, so the stream need not wait out its backoff.
      if (!unreachable) stream.retryNow();
    },
  });

  // One handler per event type; adding an event adds an entry.
  const handlers: { [Type in StreamEvent['type']]: (event: Extract<StreamEvent, { type: Type }>) => void } = {
    typing() {
      // A turn starts: if a reply is still half-streamed, its turn started over and streams anew.
      list.restartStreaming();
      setTyping(true);
    },
    delta(event) {
      setTyping(false);
      list.appendDelta(event.messageId, event.text);
    },
    message(event) {
      if (event.role === 'visitor') {
        // Sent from another tab of the same conversation.
        if (!outbox.owns(event.id)) list.addVisitor(event.id, event.text, event.at);
        return;
      }
      setTyping(false);
      // A newer message makes any earlier question's buttons stale.
      openChoices?.disable();
      openChoices = undefined;
      if (list.completeAssistant(event.id, event.text, event.sender, event.at, event.failed ? event.replyTo : undefined)) {
        if (event.choices) showChoices(event.id, event.choices, true, event.choicesExpireAt);
        options.onReply(event.text);
      }
      // A reply to a message this tab has never seen: another tab sent it; catch up.
      if (event.replyTo && !list.has(event.replyTo) && !outbox.owns(event.replyTo)) void resync();
    },
    handoff(event) {
      // No team could take it: the assistant says so in its reply; a status line would mislead.
      if (event.status === 'unavailable') return;
      list.addStatus(strings.handoff(event.team));
      options.onReply(strings.handoff(event.team));
    },
    state(event) {
      panel.setHolder(event.holder);
    },
  };

  const stream = createEventStream({
    url: (lastEventId) => api.eventsUrl(session.token, lastEventId),
    onEvent: (event) => (handlers[event.type] as (event: StreamEvent) => void)(event),
    onReconnected: () => void resync(),
    renew: async () => {
      await renew();
    },
    onConnectionChange(up) {
      streamDown = !up;
      if (up) {
        // The first history read may have failed while the service was down.
        if (!historyLoaded) void resync();
        outbox.resume();
      } else {
        // Nobody can be typing for a visitor the service cannot reach.
        setTyping(false);
      }
      updateConnection();
    },
  });

  store.onChange((stored) => {
    // Another tab started a new chat or renewed the session: follow it.
    if (!stored.token || stored.token === session.token) return;
    if (stored.conversationId && stored.conversationId !== session.conversationId) {
      switchConversation({ token: stored.token, conversationId: stored.conversationId, expiresAt: undefined }, true);
    } else {
      session = { ...session, token: stored.token };
    }
  });

  const updateOnline = (): void => {
    panel.setOffline(!navigator.onLine);
    updateConnection();
    if (!navigator.onLine) return;
    outbox.resume();
    stream.retryNow();
  };
  updateOnline();
  window.addEventListener('offline', updateOnline);
  window.addEventListener('online', updateOnline);

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
    typing(typing) {
      const now = Date.now();
      if (typing ? now - typingReportedAt < TYPING_REPORT_MS : typingReportedAt === 0) return;
      typingReportedAt = typing ? now : 0;
      // Best effort: a lost report only means the service answers without waiting.
      void authorized((token) => api.reportTyping(token, typing));
    },
    send(text) {
      // A typed message answers (or passes over) any open question: its buttons go stale.
      openChoices?.disable();
      openChoices = undefined;
      const trimmed = text.trim();
      const { tray } = options.attachments;
      const uploading = tray.uploading();
      if (trimmed === '' && !tray.ready() && !uploading) return;
      const maxChars = session.site.maxMessageChars;
      if (maxChars !== undefined && trimmed.length > maxChars) {
        panel.setComposerError(strings.tooLong(maxChars));
        return;
      }
      panel.setComposerError(undefined);
      panel.clearInput();
      // The message ends the typing it was (the service sees it arrive after the last report).
      typingReportedAt = 0;
      connect();
      if (!uploading) {
        outbox.enqueue(trimmed, tray.take());
        return;
      }
      // Sent once the files are up (queued, not refused).
      panel.setComposerError(options.attachments.strings.waitForUpload);
      void tray.settled().then(() => {
        panel.setComposerError(undefined);
        const attachments = tray.take();
        if (trimmed !== '' || attachments.length > 0) outbox.enqueue(trimmed, attachments);
      });
    },
    upload: (file, onProgress, signal) => authorized((token) => uploadFile(api.uploadUrl(file.name), token, file, onProgress, signal)),
    async newChat() {
      const result = await authorized((token) => api.newChat(token));
      if (!result.ok) {
        list.addNotice(navigator.onLine ? strings.failed : strings.offline);
        return;
      }
      switchConversation(result.value, false);
      save();
      panel.setComposerError(undefined);
      panel.focusInitial();
    },
  };
}
