/**
 * The conversation log: the greeting, history, the visitor's own messages with their delivery
 * state, assistant replies as they stream, teammates' messages, the typing indicator, and status
 * lines. Each message shows who wrote it (avatar or initial, name) and when; consecutive messages
 * from one sender are grouped under one such line. Screen readers hear each message's sender and
 * time with it, and are told of new replies through a separate live region — once each, complete,
 * never the visitor's own message again (the `role="log"` itself is not live). Every message's
 * text takes its own direction (`dir="auto"`: Arabic or Hebrew right to left). The visitor's
 * messages say their state in words (Sending…, Sent, Not sent); a reply that says the service gave
 * up has a "Try again". A reply whose turn starts over (a worker died mid-answer and another picked the
 * conversation up) is streamed again in place, never twice.
 */
import { element, screenReaderText } from './dom.js';
import { renderRichText } from './render-rich-text.js';
import type { HistoryMessage, Sender } from './api.js';
import { showSentAttachments } from './attachments.js';
import type { WidgetStrings } from './strings.js';

type DeliveryState = 'pending' | 'sent' | 'failed';

export interface OutgoingBubble {
  readonly element: HTMLElement;
  setState(state: DeliveryState, failure?: { reason: string; onRetry?: () => void }): void;
}

export interface MessageList {
  readonly element: HTMLElement;
  /** Where new replies are announced to screen readers (placed beside the log). */
  readonly announcer: HTMLElement;
  /** Replaces the log with the greeting and `history`, keeping `outgoing` and in-progress replies after it. */
  replace(history: readonly HistoryMessage[], outgoing: readonly OutgoingBubble[]): void;
  addOutgoing(text: string): OutgoingBubble;
  addVisitor(id: string, text: string, at: number | undefined): void;
  /** Appends streamed text to reply `id`, creating its bubble on the first piece. */
  appendDelta(id: string, text: string): void;
  /**
   * Shows the complete message `id` from `sender`, replacing streamed text; `retryOf` (the
   * visitor's message a failure apology answers) adds "Try again". Returns false if it was already complete.
   */
  completeAssistant(id: string, text: string, sender: Sender, at: number | undefined, retryOf?: string): boolean;
  /** What "Try again" under a failed reply does with the visitor's message id it answers. */
  onRetry(handler: (visitorMessageId: string) => void): void;
  /** The text of a visitor's message the log shows (from history or another tab). */
  visitorText(id: string): string | undefined;
  /** A reply is taking long: say the service is still on it (cleared with the typing indicator). */
  setStillWorking(visible: boolean): void;
  /** A turn is starting (again): a reply still streaming restarts from its next piece. */
  restartStreaming(): void;
  has(id: string): boolean;
  /** Puts `node` (a question's answers) under the assistant message `id`. */
  attachUnder(id: string, node: HTMLElement): void;
  setTyping(visible: boolean): void;
  addStatus(text: string): void;
  addNotice(text: string): void;
  scrollToEnd(): void;
}

interface AssistantEntry {
  /** The message with its sender line: what the log holds. */
  element: HTMLElement;
  bubble: HTMLElement;
  content: HTMLElement;
  text: string;
  complete: boolean;
  /** Its turn started over: the next streamed piece replaces the text instead of extending it. */
  restart: boolean;
}

const PINNED_DISTANCE_PX = 80;
// Messages from one sender further apart than this start a new group (with its own line and time).
const GROUP_GAP_MS = 5 * 60_000;

export function createMessageList(strings: WidgetStrings, siteName: string, greeting: string): MessageList {
  // Times in the visitor's own locale, whatever language the widget speaks.
  const timeFormat = new Intl.DateTimeFormat(navigator.languages?.length ? [...navigator.languages] : undefined, { hour: 'numeric', minute: '2-digit' });
  const timeOf = (at: number | undefined): string => (at === undefined ? '' : `, ${timeFormat.format(at)}`);
  let retryHandler: ((visitorMessageId: string) => void) | undefined;
  const visitorTexts = new Map<string, string>();
  let lastSent: HTMLElement | undefined;
  const senderKey = (sender: Sender): string => (sender.kind === 'teammate' ? `teammate:${sender.name}:${sender.team}` : 'assistant');
  const initial = (name: string): string => (name.trim()[0] ?? '?').toUpperCase();
  /** "Ana · Support · 10:42" with an initial avatar (the visitor's own: "You · 10:42"); screen readers get the bubble's prefix instead. */
  const senderLine = (sender: Sender | 'visitor', at: number | undefined): HTMLElement => {
    const parts: Node[] = [];
    if (sender !== 'visitor') {
      const name = sender.kind === 'teammate' ? sender.name : siteName;
      parts.push(
        element('span', { className: `sender-avatar ${sender.kind}`, text: initial(name) }),
        element('span', { className: 'sender-name', text: name, attributes: { dir: 'auto' } }),
      );
      if (sender.kind === 'teammate' && sender.team) parts.push(element('span', { className: 'sender-team', text: sender.team }));
    } else {
      parts.push(element('span', { className: 'sender-name', text: strings.you }));
    }
    if (at !== undefined) {
      parts.push(element('time', { className: 'sender-time', text: timeFormat.format(at), attributes: { datetime: new Date(at).toISOString() } }));
    }
    return element('div', { className: 'sender-line', attributes: { 'aria-hidden': 'true' } }, parts);
  };
  const markSender = (node: HTMLElement, key: string, at: number | undefined): void => {
    node.dataset.sender = key;
    if (at !== undefined) node.dataset.at = String(at);
  };

  const log = element('div', {
    className: 'log',
    attributes: { role: 'log', 'aria-live': 'off', 'aria-label': strings.conversationLabel, tabindex: '0' },
  });
  const announcer = element('div', { className: 'sr-only', attributes: { 'aria-live': 'polite', 'aria-atomic': 'false' } });
  const announce = (text: string): void => {
    announcer.append(element('p', { text }));
    while (announcer.childElementCount > 3) announcer.firstElementChild?.remove();
  };
  const stillWorking = element('div', { className: 'still-working', text: strings.stillWorking });
  const typing = element('div', { className: 'typing' }, [
    element('span', { className: 'dot', attributes: { 'aria-hidden': 'true' } }),
    element('span', { className: 'dot', attributes: { 'aria-hidden': 'true' } }),
    element('span', { className: 'dot', attributes: { 'aria-hidden': 'true' } }),
    screenReaderText(strings.typing(siteName)),
  ]);
  const assistants = new Map<string, AssistantEntry>();
  const visitors = new Set<string>();

  const isPinned = (): boolean => log.scrollHeight - log.scrollTop - log.clientHeight < PINNED_DISTANCE_PX;
  const scrollToEnd = (): void => {
    log.scrollTop = log.scrollHeight;
  };
  /** Scrolls just enough for `node` to be seen above the log's bottom edge. */
  const reveal = (node: HTMLElement): void => {
    const padding = Number.parseFloat(getComputedStyle(log).paddingBottom) || 0;
    const hidden = node.getBoundingClientRect().bottom - (log.getBoundingClientRect().bottom - padding);
    if (hidden > 0) log.scrollTop += hidden;
  };
  /**
   * A message continues the group of the one before it when both have the same sender and are
   * close in time; status lines and notices end a group. Only the first of a group shows its line.
   */
  const regroup = (): void => {
    let previous: { sender: string; at: number | undefined } | undefined;
    for (const node of Array.from(log.children)) {
      if (!(node instanceof HTMLElement) || node === typing) continue;
      const sender = node.dataset.sender;
      if (sender === undefined) {
        previous = undefined;
        continue;
      }
      const at = node.dataset.at === undefined ? undefined : Number(node.dataset.at);
      const close = previous?.at === undefined || at === undefined || at - previous.at < GROUP_GAP_MS;
      node.classList.toggle('grouped', previous?.sender === sender && close);
      previous = { sender, at };
    }
  };
  // New entries go above the typing indicator, which always stays last while it shows.
  const append = (node: Node): void => {
    const pinned = isPinned();
    if (typing.isConnected) log.insertBefore(node, typing);
    else log.append(node);
    regroup();
    if (pinned) scrollToEnd();
  };

  const prefixOf = (sender: Sender, at: number | undefined): string =>
    `${sender.kind === 'teammate' ? `${sender.name}${sender.team ? ` (${sender.team})` : ''}` : siteName}${timeOf(at)}:`;
  const assistantBubble = (id: string, text: string, complete: boolean, sender: Sender, at: number | undefined): AssistantEntry => {
    const content = element('div', { className: 'content', attributes: { dir: 'auto' } });
    const teammate = sender.kind === 'teammate';
    const bubble = element('div', { className: teammate ? 'message assistant teammate' : 'message assistant' }, [
      screenReaderText(prefixOf(sender, at)),
      content,
    ]);
    const wrapper = element('div', { className: 'incoming' }, [senderLine(sender, at), bubble]);
    markSender(wrapper, senderKey(sender), at);
    const entry: AssistantEntry = { element: wrapper, bubble, content, text, complete, restart: false };
    render(entry);
    assistants.set(id, entry);
    return entry;
  };
  /** "Try again" under a reply that says the service gave up on the visitor's message `retryOf`. */
  const offerRetry = (entry: AssistantEntry, retryOf: string | undefined): void => {
    if (retryOf === undefined) return;
    const retry = element('button', { className: 'link-button retry-turn', text: strings.tryAgain, attributes: { type: 'button' } });
    retry.addEventListener('click', () => {
      retry.remove();
      retryHandler?.(retryOf);
    });
    entry.element.append(retry);
  };
  const render = (entry: AssistantEntry): void => {
    entry.content.replaceChildren(renderRichText(entry.text, !entry.complete));
    if (entry.complete) entry.bubble.removeAttribute('aria-busy');
    else entry.bubble.setAttribute('aria-busy', 'true');
  };
  const visitorBubble = (text: string, at: number | undefined): HTMLElement =>
    element('div', { className: 'message visitor' }, [
      screenReaderText(`${strings.you}${timeOf(at)}:`),
      element('span', { className: 'content', text, attributes: { dir: 'auto' } }),
    ]);
  const visitorMessage = (text: string, at: number | undefined, after: readonly HTMLElement[] = []): HTMLElement => {
    const wrapper = element('div', { className: 'outgoing' }, [senderLine('visitor', at), visitorBubble(text, at), ...after]);
    markSender(wrapper, 'visitor', at);
    return wrapper;
  };

  const showGreeting = (): void => {
    if (!greeting) return;
    const bubble = element('div', { className: 'message assistant' }, [
      screenReaderText(`${siteName}:`),
      element('div', { className: 'content', attributes: { dir: 'auto' } }, [renderRichText(greeting)]),
    ]);
    const wrapper = element('div', { className: 'incoming' }, [senderLine({ kind: 'assistant' }, undefined), bubble]);
    markSender(wrapper, 'assistant', undefined);
    log.append(wrapper);
  };
  showGreeting();

  return {
    element: log,
    announcer,
    onRetry(handler) {
      retryHandler = handler;
    },
    visitorText: (id) => visitorTexts.get(id),
    setStillWorking(visible) {
      if (visible === stillWorking.isConnected) return;
      if (!visible) {
        stillWorking.remove();
        return;
      }
      if (!typing.isConnected) return;
      typing.after(stillWorking);
      announce(strings.stillWorking);
      if (isPinned()) scrollToEnd();
    },
    replace(history, outgoing) {
      const streaming = [...assistants].filter(([, entry]) => !entry.complete);
      const typingShown = typing.isConnected;
      const stillShown = stillWorking.isConnected;
      log.replaceChildren();
      assistants.clear();
      visitors.clear();
      showGreeting();
      for (const message of history) {
        if (message.role === 'visitor') {
          visitors.add(message.id);
          visitorTexts.set(message.id, message.text);
          const wrapper = visitorMessage(message.text, message.at);
          showSentAttachments(wrapper, message.attachments, message.text === '');
          log.append(wrapper);
        } else {
          const entry = assistantBubble(message.id, message.text, true, message.sender, message.at);
          // Only the newest reply offers to try again: an older failure was answered since.
          if (message === history[history.length - 1]) offerRetry(entry, message.retryOf);
          log.append(entry.element);
        }
      }
      for (const bubble of outgoing) log.append(bubble.element);
      for (const [id, entry] of streaming) {
        if (assistants.has(id)) continue;
        assistants.set(id, entry);
        log.append(entry.element);
      }
      if (typingShown) log.append(typing);
      if (stillShown) log.append(stillWorking);
      regroup();
      scrollToEnd();
    },
    addOutgoing(text) {
      const delivery = element('div', { className: 'delivery' });
      const wrapper = visitorMessage(text, Date.now(), [delivery]);
      const bubble = wrapper.querySelector('.message') as HTMLElement;
      append(wrapper);
      scrollToEnd();
      return {
        element: wrapper,
        setState(state, failure) {
          bubble.classList.toggle('failed', state === 'failed');
          delivery.classList.toggle('failed', state === 'failed');
          delivery.replaceChildren();
          delivery.hidden = false;
          if (state === 'sent') {
            // "Sent" under the newest sent message only, as messengers do.
            if (lastSent && lastSent !== delivery) lastSent.hidden = true;
            lastSent = delivery;
          }
          if (!failure) {
            delivery.append(element('span', { text: state === 'sent' ? strings.sent : strings.sending }));
            return;
          }
          delivery.append(element('span', { text: failure.reason }));
          if (failure.onRetry) {
            const retry = element('button', { className: 'link-button', text: strings.retry, attributes: { type: 'button' } });
            retry.addEventListener('click', failure.onRetry, { once: true });
            delivery.append(retry);
          }
          // The line appears under a bubble already scrolled to: bring it out from under the composer.
          reveal(wrapper);
        },
      };
    },
    addVisitor(id, text, at) {
      if (visitors.has(id)) return;
      visitors.add(id);
      visitorTexts.set(id, text);
      append(visitorMessage(text, at));
    },
    appendDelta(id, text) {
      const entry = assistants.get(id);
      if (entry?.complete) return;
      if (entry) {
        const pinned = isPinned();
        entry.text = entry.restart ? text : entry.text + text;
        entry.restart = false;
        render(entry);
        if (pinned) scrollToEnd();
      } else {
        append(assistantBubble(id, text, false, { kind: 'assistant' }, Date.now()).element);
      }
    },
    completeAssistant(id, text, sender, at, retryOf) {
      const existing = assistants.get(id);
      if (existing?.complete) return false;
      const pinned = isPinned();
      let entry = existing;
      if (entry) {
        entry.text = text;
        entry.complete = true;
        render(entry);
      } else {
        entry = assistantBubble(id, text, true, sender, at ?? Date.now());
        append(entry.element);
      }
      offerRetry(entry, retryOf);
      if (pinned) scrollToEnd();
      announce(`${prefixOf(sender, at)} ${entry.content.textContent ?? ''}`);
      return true;
    },
    restartStreaming() {
      for (const entry of assistants.values()) if (!entry.complete) entry.restart = true;
    },
    has: (id) => assistants.has(id) || visitors.has(id),
    attachUnder(id, node) {
      const pinned = isPinned();
      assistants.get(id)?.element.append(node);
      if (pinned) scrollToEnd();
    },
    setTyping(visible) {
      if (visible === typing.isConnected) return;
      if (!visible) {
        typing.remove();
        stillWorking.remove();
        return;
      }
      const pinned = isPinned();
      log.append(typing);
      if (pinned) scrollToEnd();
    },
    addStatus(text) {
      append(element('div', { className: 'status-line', text }));
      announce(text);
    },
    addNotice(text) {
      append(element('div', { className: 'notice', text }));
    },
    scrollToEnd,
  };
}
