/**
 * The launcher: a round button in the site's accent colour, named "Open chat" (in the widget's
 * language), with an unread badge for replies that arrived while the panel was closed — then named
 * "Open chat, 2 new messages", so the number it shows is part of its name — and a one-line
 * preview of the newest of them beside it (a button that opens the chat).
 */
import { element, icon } from './dom.js';
import type { WidgetStrings } from './strings.js';

export interface Launcher {
  readonly element: HTMLButtonElement;
  setUnread(count: number): void;
  setExpanded(expanded: boolean): void;
  /** The widget's language was settled by the session. */
  setStrings(strings: WidgetStrings): void;
  /** Shows the newest unread reply's first line beside the launcher (undefined hides it). */
  setPreview(text: string | undefined): void;
}

const PREVIEW_CHARS = 90;

export function createLauncher(initial: WidgetStrings, panelId: string, onOpen: () => void): Launcher {
  let strings = initial;
  let unread = 0;
  const badge = element('span', { className: 'badge', attributes: { 'aria-hidden': 'true', hidden: '' } });
  const button = element(
    'button',
    {
      className: 'launcher',
      attributes: {
        type: 'button',
        'aria-label': strings.openChat,
        'aria-haspopup': 'dialog',
        'aria-expanded': 'false',
        'aria-controls': panelId,
      },
    },
    [icon('chat'), badge],
  );
  button.addEventListener('click', onOpen);
  const preview = element('button', { className: 'launcher-preview', attributes: { type: 'button', hidden: '', dir: 'auto' } });
  preview.addEventListener('click', onOpen);
  const setUnread = (count: number): void => {
    unread = count;
    badge.hidden = count === 0;
    badge.textContent = count > 99 ? '99+' : String(count);
    button.setAttribute('aria-label', count === 0 ? strings.openChat : `${strings.openChat}, ${strings.unread(count)}`);
  };
  return {
    element: button,
    setUnread,
    setExpanded(expanded) {
      button.hidden = expanded;
      if (expanded) preview.hidden = true;
      button.setAttribute('aria-expanded', String(expanded));
    },
    setStrings(next) {
      strings = next;
      setUnread(unread);
    },
    setPreview(text) {
      // Plain words (the chat part strips the reply's formatting: no `**`, backticks or fences).
      const line = text?.trim();
      if (!preview.isConnected) button.after(preview);
      preview.hidden = !line;
      preview.textContent = line && line.length > PREVIEW_CHARS ? `${line.slice(0, PREVIEW_CHARS - 1)}…` : (line ?? '');
    },
  };
}
