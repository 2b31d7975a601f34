/**
 * The conversation log: the greeting, history, the visitor's own messages with their delivery
 * state, assistant replies as they stream, teammates' messages, the typing indicator, and status
 * lines. Each message shows who wrote it (avatar or initial, name) and when; consecutive messages
 * from one sender are grouped under one such line. It is a `role="log"` live region; a reply
 * still streaming is marked aria-busy so screen readers read it once, complete, instead of word
 * by word. A reply whose turn starts over (a worker died mid-answer and another picked the
 * conversation up) is streamed again in place, never twice.
 */
import { element, screenReaderText } from './dom.js';
import { renderRichText } from './render-rich-text.js';
import type { HistoryMessage, Sender } from './api.js';
import type { WidgetStrings } from './strings.js';

type DeliveryState = 'pending' | 'sent' | 'failed';

export interface OutgoingBubble {
  readonly element: HTMLElement;
  setState(state: DeliveryState, failure?: { reason: string; onRetry?: () => void }): void;
}

export interface MessageList {
  readonly element: HTMLElement;
  /** Replaces the log with the greeting and `history`, keeping `outgoing` and in-progress replies after it. */
  replace(history: readonly HistoryMessage[], outgoing: readonly OutgoingBubble[]): void;
  addOutgoing(text: string): OutgoingBubble;
  addVisitor(id: string, text: string, at: number | undefined): void;
  /** Appends streamed text to reply `id`, creating its bubble on the first piece. */
  appendDelta(id: string, text: string): void;
  /** Shows the complete message `id` from `sender`, replacing streamed text. Returns false if it was already complete. */
  completeAssistant(id: string, text: string, sender: Sender, at: number | undefined): boolean;
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

export function createMessageList(strings: WidgetStrings, siteName: string, greeting: string, language: string): MessageList {
  const timeFormat = new Intl.DateTimeFormat(language, { hour: 'numeric', minute: '2-digit' });
  const senderKey = (sender: Sender): string => (sender.kind === 'teammate' ? `teammate:${sender.name}:${sender.team}` : 'assistant');
  const initial = (name: string): string => (name.trim()[0] ?? '?').toUpperCase();
  /** "Ana · Support · 10:42" with an initial avatar (the visitor's own: "You · 10:42"); screen readers get the bubble's prefix instead. */
  const senderLine = (sender: Sender | 'visitor', at: number | undefined): HTMLElement => {
    const parts: Node[] = [];
    if (sender !== 'visitor') {
      const name = sender.kind === 'teammate' ? sender.name : siteName;
      parts.push(
        element('span', { className: `sender-avatar ${sender.kind}`, text: initial(name) }),
        element('span', { className: 'sender-name', text: name }),
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
    attributes: { role: 'log', 'aria-live': 'polite', 'aria-label': strings.conversationLabel, tabindex: '0' },
  });
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

  const assistantBubble = (id: string, text: string, complete: boolean, sender: Sender, at: number | undefined): AssistantEntry => {
    const content = element('div');
    const teammate = sender.kind === 'teammate';
    const prefix = teammate ? `${sender.name}${sender.team ? ` (${sender.team})` : ''}:` : `${siteName}:`;
    const bubble = element('div', { className: teammate ? 'message assistant teammate' : 'message assistant' }, [screenReaderText(prefix), content]);
    const wrapper = element('div', { className: 'incoming' }, [senderLine(sender, at), bubble]);
    markSender(wrapper, senderKey(sender), at);
    const entry: AssistantEntry = { element: wrapper, bubble, content, text, complete, restart: false };
    render(entry);
    assistants.set(id, entry);
    return entry;
  };
  const render = (entry: AssistantEntry): void => {
    entry.content.replaceChildren(renderRichText(entry.text));
    if (entry.complete) entry.bubble.removeAttribute('aria-busy');
    else entry.bubble.setAttribute('aria-busy', 'true');
  };
  const visitorBubble = (text: string): HTMLElement =>
    element('div', { className: 'message visitor' }, [screenReaderText(strings.visitorPrefix), document.createTextNode(text)]);
  const visitorMessage = (bubble: HTMLElement, at: number | undefined, after: readonly HTMLElement[] = []): HTMLElement => {
    const wrapper = element('div', { className: 'outgoing' }, [senderLine('visitor', at), bubble, ...after]);
    markSender(wrapper, 'visitor', at);
    return wrapper;
  };

  const showGreeting = (): void => {
    if (!greeting) return;
    const bubble = element('div', { className: 'message assistant' }, [screenReaderText(`${siteName}:`), renderRichText(greeting)]);
    const wrapper = element('div', { className: 'incoming' }, [senderLine({ kind: 'assistant' }, undefined), bubble]);
    markSender(wrapper, 'assistant', undefined);
    log.append(wrapper);
  };
  showGreeting();

  return {
    element: log,
    replace(history, outgoing) {
      const streaming = [...assistants].filter(([, entry]) => !entry.complete);
      const typingShown = typing.isConnected;
      log.replaceChildren();
      assistants.clear();
      visitors.clear();
      showGreeting();
      for (const message of history) {
        if (message.role === 'visitor') {
          visitors.add(message.id);
          log.append(visitorMessage(visitorBubble(message.text), message.at));
        } else {
          log.append(assistantBubble(message.id, message.text, true, message.sender, message.at).element);
        }
      }
      for (const bubble of outgoing) log.append(bubble.element);
      for (const [id, entry] of streaming) {
        if (assistants.has(id)) continue;
        assistants.set(id, entry);
        log.append(entry.element);
      }
      if (typingShown) log.append(typing);
      regroup();
      scrollToEnd();
    },
    addOutgoing(text) {
      const bubble = visitorBubble(text);
      const delivery = element('div', { className: 'delivery', attributes: { hidden: '' } });
      const wrapper = visitorMessage(bubble, Date.now(), [delivery]);
      append(wrapper);
      scrollToEnd();
      return {
        element: wrapper,
        setState(state, failure) {
          bubble.classList.toggle('pending', state === 'pending');
          bubble.classList.toggle('failed', state === 'failed');
          delivery.replaceChildren();
          delivery.hidden = !failure;
          if (!failure) return;
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
      append(visitorMessage(visitorBubble(text), at));
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
    completeAssistant(id, text, sender, at) {
      const entry = assistants.get(id);
      if (entry?.complete) return false;
      if (entry) {
        const pinned = isPinned();
        entry.text = text;
        entry.complete = true;
        render(entry);
        if (pinned) scrollToEnd();
      } else {
        append(assistantBubble(id, text, true, sender, at ?? Date.now()).element);
      }
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
        return;
      }
      const pinned = isPinned();
      log.append(typing);
      if (pinned) scrollToEnd();
    },
    addStatus(text) {
      append(element('div', { className: 'status-line', text }));
    },
    addNotice(text) {
      append(element('div', { className: 'notice', text }));
    },
    scrollToEnd,
  };
}
