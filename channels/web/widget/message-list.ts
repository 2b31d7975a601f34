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
import { element } from './dom.js';
import type { HistoryMessage, Sender } from './api.js';
import { showSentAttachments } from './sent-attachments.js';
import { createIndicators, createLogLayout } from './message-log.js';
import { createBubbles, renderEntry, type AssistantEntry } from './message-bubbles.js';
import type { WidgetStrings } from './strings.js';

/** `waiting`: not sent yet, resent by itself (muted); `failed`: refused, or waiting over 2 minutes (red, with Retry or Send all). */
type DeliveryState = 'pending' | 'sent' | 'waiting' | 'failed';

export interface OutgoingBubble {
  readonly element: HTMLElement;
  /** `failure.retryLabel`: what its button says (Retry by default). */
  setState(state: DeliveryState, failure?: { reason: string; onRetry?: () => void; retryLabel?: string; progress?: HTMLElement }): void;
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
  /** The site's name (replies from now on) and greeting (shown again at the next `replace`). */
  setSite(name: string, greeting: string): void;
}

/** A visitor's message as it is being sent: its state in words under it, and "Retry" when it failed. */
function outgoingBubble(
  wrapper: HTMLElement,
  delivery: HTMLElement,
  strings: WidgetStrings,
  /** The line under the newest sent message (only it says "Sent"). */
  lastSent: { delivery?: HTMLElement },
  reveal: (node: HTMLElement) => void,
): OutgoingBubble {
  const bubble = wrapper.querySelector('.message') as HTMLElement;
  return {
    element: wrapper,
    setState(state, failure) {
      bubble.classList.toggle('failed', state === 'failed');
      delivery.classList.toggle('failed', state === 'failed');
      delivery.classList.toggle('waiting', state === 'waiting');
      delivery.replaceChildren();
      delivery.hidden = false;
      if (state === 'sent') {
        // "Sent" under the newest sent message only, as messengers do.
        if (lastSent.delivery && lastSent.delivery !== delivery) lastSent.delivery.hidden = true;
        lastSent.delivery = delivery;
      }
      if (!failure) {
        delivery.append(element('span', { text: state === 'sent' ? strings.sent : strings.sending }));
        return;
      }
      delivery.append(element('span', { text: failure.reason }));
      if (failure.progress) delivery.append(failure.progress);
      if (failure.onRetry) {
        const retry = element('button', { className: 'link-button', text: failure.retryLabel ?? strings.retry, attributes: { type: 'button' } });
        retry.addEventListener('click', failure.onRetry, { once: true });
        delivery.append(retry);
      }
      // The line appears under a bubble already scrolled to: bring it out from under the composer.
      reveal(wrapper);
    },
  };
}

/** "Try again" under a reply that says the service gave up on the visitor's message `retryOf`. */
function addRetry(entry: AssistantEntry, retryOf: string | undefined, label: string, onRetry: (visitorMessageId: string) => void): void {
  if (retryOf === undefined) return;
  const retry = element('button', { className: 'link-button retry-turn', text: label, attributes: { type: 'button' } });
  retry.addEventListener('click', () => {
    retry.remove();
    onRetry(retryOf);
  });
  entry.element.append(retry);
}

/** How long an announcement stays in the live region (long enough to be queued by any screen reader). */
const ANNOUNCEMENT_MS = 5_000;

/** A message's text as said aloud: its paragraphs, list items and code blocks each a sentence of their own, never run together. */
function spokenText(content: HTMLElement): string {
  const blocks = Array.from(content.querySelectorAll('p, li, pre'), (block) => (block.textContent ?? '').trim()).filter(Boolean);
  const parts = blocks.length > 0 ? blocks : [(content.textContent ?? '').trim()];
  return parts.map((part) => (/[.!?:;…]$/.test(part) ? part : `${part}.`)).join(' ');
}

/** The live region new replies are announced in; each announcement is taken out once spoken (left in place, browsing would read it a second time beside the log). */
function createAnnouncer() {
  const announcer = element('div', { className: 'sr-only', attributes: { 'aria-live': 'polite', 'aria-atomic': 'false' } });
  const announce = (text: string): void => {
    const said = element('p', { text });
    announcer.append(said);
    setTimeout(() => said.remove(), ANNOUNCEMENT_MS);
  };
  return { announcer, announce };
}

/** The greeting atop the log: drawn at each redraw (`show`), and in the site's words once they arrive (`set`). */
function createGreeting(log: HTMLElement, draw: (greeting: string, at: number) => HTMLElement, initial: string) {
  let greeting = initial;
  let shown: { node: HTMLElement; at: number } | undefined;
  return {
    show(at: number): void {
      shown = greeting ? { node: draw(greeting, at), at } : undefined;
      if (shown) log.append(shown.node);
    },
    set(next: string): void {
      greeting = next;
      if (!shown?.node.isConnected || !greeting) return;
      const node = draw(greeting, shown.at);
      shown.node.replaceWith(node);
      shown.node = node;
    },
  };
}

/** What the list holds and draws with, for a redraw from the service's history. */
interface LogEntries {
  log: HTMLElement;
  assistants: Map<string, AssistantEntry>;
  visitors: Set<string>;
  visitorTexts: Map<string, string>;
  lastSent: { delivery?: HTMLElement };
  strings: WidgetStrings;
  layout: ReturnType<typeof createLogLayout>;
  typing: HTMLElement;
  stillWorking: HTMLElement;
  visitorMessage: ReturnType<typeof createBubbles>['visitorMessage'];
  assistantBubble(id: string, text: string, complete: boolean, sender: Sender, at: number | undefined): AssistantEntry;
  offerRetry(entry: AssistantEntry, retryOf: string | undefined): void;
  showGreeting(at?: number): void;
  announce(text: string): void;
  prefixOf: ReturnType<typeof createBubbles>['prefixOf'];
}

/**
 * The log drawn again from the service's history: the greeting, each message (the newest reply
 * offering to try again, "Sent" under the newest visitor message), then what is still on its way
 * (our outgoing messages, replies streaming, the indicators that were shown).
 */
function redraw(entries: LogEntries, history: readonly HistoryMessage[], outgoing: readonly OutgoingBubble[]): void {
  const { log, assistants, visitors, strings, typing, stillWorking } = entries;
  const streaming = [...assistants].filter(([, entry]) => !entry.complete);
  const typingShown = typing.isConnected;
  const stillShown = stillWorking.isConnected;
  log.replaceChildren();
  assistants.clear();
  visitors.clear();
  entries.showGreeting(history[0]?.at);
  let newestVisitor: HTMLElement | undefined;
  for (const message of history) {
    if (message.role === 'visitor') {
      visitors.add(message.id);
      entries.visitorTexts.set(message.id, message.text);
      const wrapper = (newestVisitor = entries.visitorMessage(message.text, message.at));
      showSentAttachments(wrapper, message.attachments, message.text === '', strings);
      log.append(wrapper);
    } else {
      const entry = entries.assistantBubble(message.id, message.text, true, message.sender, message.at);
      // Only the newest reply offers to try again: an older failure was answered since.
      if (message === history[history.length - 1]) entries.offerRetry(entry, message.retryOf);
      log.append(entry.element);
    }
  }
  // "Sent" under the newest message the service has, after a reload too (none while one of ours still waits).
  if (newestVisitor && outgoing.length === 0)
    newestVisitor.append((entries.lastSent.delivery = element('div', { className: 'delivery' }, [element('span', { text: strings.sent })])));
  for (const bubble of outgoing) log.append(bubble.element);
  for (const [id, entry] of streaming) {
    if (assistants.has(id)) continue;
    assistants.set(id, entry);
    log.append(entry.element);
  }
  if (typingShown) log.append(typing);
  if (stillShown) log.append(stillWorking);
  entries.layout.regroup();
  entries.layout.scrollToEnd();
}

/** A streamed reply grows by `text` (or starts over with it after a reconnect), kept in view when it was. */
function appendDelta(entries: LogEntries, id: string, text: string): void {
  const { isPinned, scrollToEnd, append } = entries.layout;
  const entry = entries.assistants.get(id);
  if (entry?.complete) return;
  if (entry) {
    const pinned = isPinned();
    entry.text = entry.restart ? text : entry.text + text;
    entry.restart = false;
    renderEntry(entry);
    if (pinned) scrollToEnd();
  } else {
    append(entries.assistantBubble(id, text, false, { kind: 'assistant' }, Date.now()).element);
  }
}

/** A reply is complete (streamed or not): drawn whole, offering to try again when it says so, and announced; false when it already was. */
function completeAssistant(entries: LogEntries, id: string, text: string, sender: Sender, at: number | undefined, retryOf: string | undefined): boolean {
  const { isPinned, scrollToEnd, append } = entries.layout;
  const existing = entries.assistants.get(id);
  if (existing?.complete) return false;
  const pinned = isPinned();
  let entry = existing;
  if (entry) {
    entry.text = text;
    entry.complete = true;
    renderEntry(entry);
  } else {
    entry = entries.assistantBubble(id, text, true, sender, at ?? Date.now());
    append(entry.element);
  }
  entries.offerRetry(entry, retryOf);
  if (pinned) scrollToEnd();
  entries.announce(`${entries.prefixOf(sender, at)} ${spokenText(entry.content)}`);
  return true;
}

export function createMessageList(strings: WidgetStrings, siteName: string, siteGreeting: string): MessageList {
  const site = { name: siteName };
  const { prefixOf, assistantEntry, visitorMessage, greetingMessage } = createBubbles(strings, site);
  let retryHandler: ((visitorMessageId: string) => void) | undefined;
  const visitorTexts = new Map<string, string>();
  const lastSent: { delivery?: HTMLElement } = {};

  const log = element('div', {
    className: 'log',
    attributes: { role: 'log', 'aria-live': 'off', 'aria-label': strings.conversationLabel, tabindex: '0' },
  });
  const { announcer, announce } = createAnnouncer();
  const indicators = createIndicators(log, strings, site, announce);
  const { typing, stillWorking } = indicators;
  const assistants = new Map<string, AssistantEntry>();
  const visitors = new Set<string>();

  const layout = createLogLayout(log, typing);
  const { isPinned, scrollToEnd, reveal, append } = layout;

  const assistantBubble = (id: string, text: string, complete: boolean, sender: Sender, at: number | undefined): AssistantEntry => {
    const entry = assistantEntry(text, complete, sender, at);
    assistants.set(id, entry);
    return entry;
  };
  const offerRetry = (entry: AssistantEntry, retryOf: string | undefined): void => addRetry(entry, retryOf, strings.tryAgain, (id) => retryHandler?.(id));
  const shownAt = Date.now();
  const greetingLine = createGreeting(log, greetingMessage, siteGreeting);
  const showGreeting = (at = shownAt): void => greetingLine.show(at);
  showGreeting();
  const entries: LogEntries = {
    log,
    assistants,
    visitors,
    visitorTexts,
    lastSent,
    strings,
    layout,
    typing,
    stillWorking,
    visitorMessage,
    assistantBubble,
    offerRetry,
    showGreeting,
    announce,
    prefixOf,
  };

  return {
    element: log,
    announcer,
    onRetry(handler) {
      retryHandler = handler;
    },
    visitorText: (id) => visitorTexts.get(id),
    setStillWorking: (visible) => indicators.setStillWorking(visible, layout),
    replace: (history, outgoing) => redraw(entries, history, outgoing),
    addOutgoing(text) {
      const delivery = element('div', { className: 'delivery' });
      const wrapper = visitorMessage(text, Date.now(), [delivery]);
      append(wrapper);
      scrollToEnd();
      return outgoingBubble(wrapper, delivery, strings, lastSent, reveal);
    },
    addVisitor(id, text, at) {
      if (visitors.has(id)) return;
      visitors.add(id);
      visitorTexts.set(id, text);
      append(visitorMessage(text, at));
    },
    appendDelta: (id, text) => appendDelta(entries, id, text),
    completeAssistant: (id, text, sender, at, retryOf) => completeAssistant(entries, id, text, sender, at, retryOf),
    restartStreaming() {
      for (const entry of assistants.values()) if (!entry.complete) entry.restart = true;
    },
    has: (id) => assistants.has(id) || visitors.has(id),
    attachUnder(id, node) {
      const pinned = isPinned();
      assistants.get(id)?.element.append(node);
      if (pinned) scrollToEnd();
    },
    setTyping: (visible) => indicators.setTyping(visible, layout),
    addStatus(text) {
      append(element('div', { className: 'status-line', text }));
      announce(text);
    },
    addNotice(text) {
      append(element('div', { className: 'notice', text }));
    },
    scrollToEnd,
    setSite(name, nextGreeting) {
      site.name = name;
      indicators.rename();
      greetingLine.set(nextGreeting);
    },
  };
}
