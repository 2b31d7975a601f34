/**
 * The launcher: a round button in the site's accent colour, always named "Open chat" (in the
 * widget's language), with an unread badge for replies that arrived while the panel was closed.
 */
import { element, icon, screenReaderText } from './dom.js';
import type { WidgetStrings } from './strings.js';

export interface Launcher {
  readonly element: HTMLButtonElement;
  setUnread(count: number): void;
  setExpanded(expanded: boolean): void;
}

export function createLauncher(strings: WidgetStrings, panelId: string, onOpen: () => void): Launcher {
  const badge = element('span', { className: 'badge', attributes: { 'aria-hidden': 'true', hidden: '' } });
  const unreadText = screenReaderText('');
  unreadText.id = 'chat-unread';
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
    [icon('chat'), badge, unreadText],
  );
  button.addEventListener('click', onOpen);
  return {
    element: button,
    setUnread(count) {
      badge.hidden = count === 0;
      badge.textContent = count > 9 ? '9+' : String(count);
      unreadText.textContent = count === 0 ? '' : strings.unread(count);
      if (count === 0) button.removeAttribute('aria-describedby');
      else button.setAttribute('aria-describedby', unreadText.id);
    },
    setExpanded(expanded) {
      button.hidden = expanded;
      button.setAttribute('aria-expanded', String(expanded));
    },
  };
}
