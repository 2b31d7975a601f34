/**
 * The conversation log: the greeting, history, the visitor's own messages with their delivery
 * state, assistant replies as they stream, the typing indicator, and status lines. It is a
 * `role="log"` live region; a reply still streaming is marked aria-busy so screen readers read
 * it once, complete, instead of word by word. A reply whose turn starts over (a worker died
 * mid-answer and another picked the conversation up) is streamed again in place, never twice.
 */
import { element, screenReaderText } from './dom.js';
import { renderRichText } from './render-rich-text.js';
import type { WidgetStrings } from './strings.js';

type DeliveryState = 'pending' | 'sent' | 'failed';

export interface OutgoingBubble {
  readonly element: HTMLElement;
  setState(state: DeliveryState, failure?: { reason: string; onRetry?: () => void }): void;
}

export interface MessageList {
  readonly element: HTMLElement;
  /** Replaces the log with the greeting and `history`, keeping `outgoing` and in-progress replies after it. */
  replace(history: readonly { id: string; role: 'visitor' | 'assistant'; text: string }[], outgoing: readonly OutgoingBubble[]): void;
  addOutgoing(text: string): OutgoingBubble;
  addVisitor(id: string, text: string): void;
  /** Appends streamed text to reply `id`, creating its bubble on the first piece. */
  appendDelta(id: string, text: string): void;
  /** Shows the complete reply `id`, replacing streamed text. Returns false if it was already complete. */
  completeAssistant(id: string, text: string): boolean;
  /** A turn is starting (again): a reply still streaming restarts from its next piece. */
  restartStreaming(): void;
  has(id: string): boolean;
  setTyping(visible: boolean): void;
  addStatus(text: string): void;
  addNotice(text: string): void;
  scrollToEnd(): void;
}

interface AssistantEntry {
  element: HTMLElement;
  content: HTMLElement;
  text: string;
  complete: boolean;
  /** Its turn started over: the next streamed piece replaces the text instead of extending it. */
  restart: boolean;
}

const PINNED_DISTANCE_PX = 80;

export function createMessageList(strings: WidgetStrings, siteName: string, greeting: string): MessageList {
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
  // New entries go above the typing indicator, which always stays last while it shows.
  const append = (node: Node): void => {
    const pinned = isPinned();
    if (typing.isConnected) log.insertBefore(node, typing);
    else log.append(node);
    if (pinned) scrollToEnd();
  };

  const assistantBubble = (id: string, text: string, complete: boolean): AssistantEntry => {
    const content = element('div');
    const bubble = element('div', { className: 'message assistant' }, [screenReaderText(`${siteName}:`), content]);
    const entry: AssistantEntry = { element: bubble, content, text, complete, restart: false };
    render(entry);
    assistants.set(id, entry);
    return entry;
  };
  const render = (entry: AssistantEntry): void => {
    entry.content.replaceChildren(renderRichText(entry.text));
    if (entry.complete) entry.element.removeAttribute('aria-busy');
    else entry.element.setAttribute('aria-busy', 'true');
  };
  const visitorBubble = (text: string): HTMLElement =>
    element('div', { className: 'message visitor' }, [screenReaderText(strings.visitorPrefix), document.createTextNode(text)]);

  const showGreeting = (): void => {
    if (greeting) log.append(element('div', { className: 'message assistant' }, [screenReaderText(`${siteName}:`), renderRichText(greeting)]));
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
          log.append(element('div', { className: 'outgoing' }, [visitorBubble(message.text)]));
        } else {
          log.append(assistantBubble(message.id, message.text, true).element);
        }
      }
      for (const bubble of outgoing) log.append(bubble.element);
      for (const [id, entry] of streaming) {
        if (assistants.has(id)) continue;
        assistants.set(id, entry);
        log.append(entry.element);
      }
      if (typingShown) log.append(typing);
      scrollToEnd();
    },
    addOutgoing(text) {
      const bubble = visitorBubble(text);
      const delivery = element('div', { className: 'delivery', attributes: { hidden: '' } });
      const wrapper = element('div', { className: 'outgoing' }, [bubble, delivery]);
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
    addVisitor(id, text) {
      if (visitors.has(id)) return;
      visitors.add(id);
      append(element('div', { className: 'outgoing' }, [visitorBubble(text)]));
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
        append(assistantBubble(id, text, false).element);
      }
    },
    completeAssistant(id, text) {
      const entry = assistants.get(id);
      if (entry?.complete) return false;
      if (entry) {
        const pinned = isPinned();
        entry.text = text;
        entry.complete = true;
        render(entry);
        if (pinned) scrollToEnd();
      } else {
        append(assistantBubble(id, text, true).element);
      }
      return true;
    },
    restartStreaming() {
      for (const entry of assistants.values()) if (!entry.complete) entry.restart = true;
    },
    has: (id) => assistants.has(id) || visitors.has(id),
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
