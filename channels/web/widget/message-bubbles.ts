/**
 * The log's messages as elements: who wrote each and when (the sender line, "Ana · Support · 10:42"
 * with an initial avatar, the visitor's own "You · 10:42", hidden from screen readers, which get
 * the bubble's prefix instead; the marks the log groups messages by), an assistant's or teammate's
 * reply (its rich text re-rendered as it streams), a visitor's message and the greeting.
 */
import { element, screenReaderText } from './dom.js';
import { renderRichText } from './render-rich-text.js';
import type { Sender } from './api.js';
import type { WidgetStrings } from './strings.js';

export interface AssistantEntry {
  /** The message with its sender line: what the log holds. */
  element: HTMLElement;
  bubble: HTMLElement;
  content: HTMLElement;
  text: string;
  complete: boolean;
  /** Its turn started over: the next streamed piece replaces the text instead of extending it. */
  restart: boolean;
}

/** Draws an entry's text (streaming: busy, and an unfinished last block) into its bubble. */
export function renderEntry(entry: AssistantEntry): void {
  entry.content.replaceChildren(renderRichText(entry.text, !entry.complete));
  if (entry.complete) entry.bubble.removeAttribute('aria-busy');
  else entry.bubble.setAttribute('aria-busy', 'true');
}

/** `site.name` is read as each message is drawn (it changes when a panel opened offline gets its session). */
export function createBubbles(strings: WidgetStrings, site: { name: string }) {
  // Times in the visitor's own locale, whatever language the widget speaks.
  const timeFormat = new Intl.DateTimeFormat(navigator.languages?.length ? [...navigator.languages] : undefined, { hour: 'numeric', minute: '2-digit' });
  const timeOf = (at: number | undefined): string => (at === undefined ? '' : `, ${timeFormat.format(at)}`);
  const senderKey = (sender: Sender): string => (sender.kind === 'teammate' ? `teammate:${sender.name}:${sender.team}` : 'assistant');
  const initial = (name: string): string => (name.trim()[0] ?? '?').toUpperCase();
  /** "Ana · Support · 10:42" with an initial avatar (the visitor's own: "You · 10:42"); screen readers get the bubble's prefix instead. */
  const senderLine = (sender: Sender | 'visitor', at: number | undefined): HTMLElement => {
    const parts: Node[] = [];
    if (sender !== 'visitor') {
      const name = sender.kind === 'teammate' ? sender.name : site.name;
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
  /** What a screen reader hears before a reply: its sender and time. */
  const prefixOf = (sender: Sender, at: number | undefined): string =>
    `${sender.kind === 'teammate' ? `${sender.name}${sender.team ? ` (${sender.team})` : ''}` : site.name}${timeOf(at)}:`;
  const assistantEntry = (text: string, complete: boolean, sender: Sender, at: number | undefined): AssistantEntry => {
    const content = element('div', { className: 'content', attributes: { dir: 'auto' } });
    const teammate = sender.kind === 'teammate';
    const bubble = element('div', { className: teammate ? 'message assistant teammate' : 'message assistant' }, [
      screenReaderText(prefixOf(sender, at)),
      content,
    ]);
    const wrapper = element('div', { className: 'incoming' }, [senderLine(sender, at), bubble]);
    markSender(wrapper, senderKey(sender), at);
    const entry: AssistantEntry = { element: wrapper, bubble, content, text, complete, restart: false };
    renderEntry(entry);
    return entry;
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
  /** The greeting, at `at` (when the conversation began, or the panel was first shown). */
  const greetingMessage = (greeting: string, at: number): HTMLElement => {
    const bubble = element('div', { className: 'message assistant' }, [
      screenReaderText(`${site.name}${timeOf(at)}:`),
      element('div', { className: 'content', attributes: { dir: 'auto' } }, [renderRichText(greeting)]),
    ]);
    const wrapper = element('div', { className: 'incoming' }, [senderLine({ kind: 'assistant' }, at), bubble]);
    markSender(wrapper, 'assistant', at);
    return wrapper;
  };
  return { prefixOf, assistantEntry, visitorMessage, greetingMessage };
}
