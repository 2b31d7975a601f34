/**
 * The log's scrolling and grouping: whether the visitor is at the end (new messages keep them
 * there), revealing a line that appeared under a bubble, and grouping consecutive messages of one
 * sender under one sender line.
 */
import { element, screenReaderText } from './dom.js';
import type { WidgetStrings } from './strings.js';

const PINNED_DISTANCE_PX = 80;
// Messages from one sender further apart than this start a new group (with its own line and time).
const GROUP_GAP_MS = 5 * 60_000;

export function createLogLayout(log: HTMLElement, typing: HTMLElement) {
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
  return { isPinned, scrollToEnd, reveal, regroup, append };
}

type LogLayout = ReturnType<typeof createLogLayout>;

/** The typing indicator (always last while it shows) and the "still working" line under it. */
export function createIndicators(log: HTMLElement, strings: WidgetStrings, site: { name: string }, announce: (text: string) => void) {
  const stillWorking = element('div', { className: 'still-working', text: strings.stillWorking });
  const typingText = screenReaderText(strings.typing(site.name));
  const typing = element('div', { className: 'typing' }, [
    element('span', { className: 'dot', attributes: { 'aria-hidden': 'true' } }),
    element('span', { className: 'dot', attributes: { 'aria-hidden': 'true' } }),
    element('span', { className: 'dot', attributes: { 'aria-hidden': 'true' } }),
    typingText,
  ]);
  return {
    typing,
    stillWorking,
    /** The site's name changed (the session arrived): "… is typing" says the new one. */
    rename(): void {
      typingText.textContent = strings.typing(site.name);
    },
    setStillWorking(visible: boolean, layout: LogLayout): void {
      if (visible === stillWorking.isConnected) return;
      if (!visible) {
        stillWorking.remove();
        return;
      }
      if (!typing.isConnected) return;
      typing.after(stillWorking);
      announce(strings.stillWorking);
      if (layout.isPinned()) layout.scrollToEnd();
    },
    setTyping(visible: boolean, layout: LogLayout): void {
      if (visible === typing.isConnected) return;
      if (!visible) {
        typing.remove();
        stillWorking.remove();
        return;
      }
      const pinned = layout.isPinned();
      log.append(typing);
      if (pinned) layout.scrollToEnd();
    },
  };
}
