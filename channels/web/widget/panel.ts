/**
 * The chat panel: a header with the site's name, "New chat" and close buttons, an offline
 * banner, the message log, a quiet "Reconnecting…" line under it while the service is
 * unreachable, and the composer (a labelled textarea and a Send button). Enter sends,
 * Shift+Enter starts a new line, Escape asks to close. It reports what the visitor does and
 * never talks to the server itself.
 */
import { element, icon } from './dom.js';
import { createMessageList, type MessageList } from './message-list.js';
import type { WidgetStrings } from './strings.js';

export interface PanelActions {
  onClose(): void;
  onNewChat(): void;
  onSend(text: string): void;
}

export interface Panel {
  readonly element: HTMLElement;
  readonly list: MessageList;
  show(visible: boolean): void;
  focusInput(): void;
  clearInput(): void;
  /** Puts text back into an empty composer (a message that could not be sent as it was). */
  restoreInput(text: string): void;
  setComposerError(text: string | undefined): void;
  setOffline(offline: boolean): void;
  /** Shows (or clears) the "Reconnecting…" line. */
  setReconnecting(reconnecting: boolean): void;
}

const COUNTER_THRESHOLD = 0.8;
const MAX_INPUT_HEIGHT_PX = 132;

export function createPanel(
  strings: WidgetStrings,
  site: { name: string; greeting: string; maxMessageChars: number | undefined },
  panelId: string,
  actions: PanelActions,
  /** The attach button (before the input) and the attachments tray (above the composer): see attachments.ts. */
  attachments?: { button: HTMLElement; tray: HTMLElement },
): Panel {
  const list = createMessageList(strings, site.name, site.greeting);
  const iconButton = (name: 'compose' | 'close', label: string, onClick: () => void): HTMLButtonElement => {
    const button = element('button', { className: 'icon-button', attributes: { type: 'button', 'aria-label': label, title: label } }, [icon(name)]);
    button.addEventListener('click', onClick);
    return button;
  };

  const header = element('div', { className: 'header' }, [
    element('div', { className: 'avatar', text: (site.name.trim()[0] ?? '?').toUpperCase(), attributes: { 'aria-hidden': 'true' } }),
    element('h2', { className: 'title', text: site.name, attributes: { id: `${panelId}-title` } }),
    iconButton('compose', strings.newChat, actions.onNewChat),
    iconButton('close', strings.closeChat, actions.onClose),
  ]);
  const banner = element('div', { className: 'banner', text: strings.offline, attributes: { role: 'status', hidden: '' } });
  // Stays in the tree (empty when connected) so screen readers announce the text when it appears.
  const connection = element('div', { className: 'connection', attributes: { role: 'status', 'aria-live': 'polite' } });

  const input = element('textarea', {
    className: 'input',
    attributes: { id: `${panelId}-input`, rows: '1', placeholder: strings.placeholder, autocomplete: 'off', enterkeyhint: 'send' },
  });
  const label = element('label', { className: 'sr-only', text: strings.inputLabel, attributes: { for: input.id } });
  const send = element('button', { className: 'send', attributes: { type: 'submit', 'aria-label': strings.send, title: strings.send } }, [icon('send')]);
  const composer = element('form', { className: 'composer' }, [label, ...(attachments ? [attachments.button] : []), input, send]);
  const composerError = element('span', { className: 'composer-error', attributes: { role: 'status' } });
  const counter = element('span', { className: 'counter', attributes: { 'aria-hidden': 'true' } });
  const footer = element('div', { className: 'composer-footer' }, [composerError, counter]);

  const panel = element(
    'div',
    { className: 'panel', attributes: { id: panelId, role: 'dialog', 'aria-modal': 'false', 'aria-labelledby': `${panelId}-title`, hidden: '' } },
    [header, banner, list.element, connection, ...(attachments ? [attachments.tray] : []), composer, footer],
  );

  const updateFooter = (): void => {
    const used = input.value.length;
    const max = site.maxMessageChars;
    const showCounter = max !== undefined && used >= max * COUNTER_THRESHOLD;
    counter.textContent = showCounter ? strings.characterCount(used, max) : '';
    counter.classList.toggle('over', showCounter && used > max);
    // The error stays in the tree (empty) so screen readers announce it when text arrives.
    footer.classList.toggle('filled', composerError.textContent !== '' || counter.textContent !== '');
  };
  const resizeInput = (): void => {
    input.style.height = 'auto';
    input.style.height = `${Math.min(input.scrollHeight + 2, MAX_INPUT_HEIGHT_PX)}px`;
  };

  composer.addEventListener('submit', (event) => {
    event.preventDefault();
    actions.onSend(input.value);
    input.focus();
  });
  input.addEventListener('keydown', (event) => {
    // keyCode 229: an input method is still composing the text.
    if (event.key !== 'Enter' || event.shiftKey || event.isComposing || event.keyCode === 229) return;
    event.preventDefault();
    actions.onSend(input.value);
  });
  input.addEventListener('input', () => {
    resizeInput();
    updateFooter();
  });
  panel.addEventListener('keydown', (event) => {
    if (event.key !== 'Escape') return;
    event.preventDefault();
    actions.onClose();
  });

  return {
    element: panel,
    list,
    show(visible) {
      panel.hidden = !visible;
      if (visible) {
        list.scrollToEnd();
        resizeInput();
      }
    },
    focusInput: () => input.focus(),
    clearInput() {
      input.value = '';
      resizeInput();
      updateFooter();
    },
    restoreInput(text) {
      if (input.value.trim() !== '') return;
      input.value = text;
      resizeInput();
      updateFooter();
    },
    setComposerError(text) {
      composerError.textContent = text ?? '';
      updateFooter();
    },
    setOffline(offline) {
      banner.hidden = !offline;
    },
    setReconnecting(reconnecting) {
      connection.textContent = reconnecting ? strings.reconnecting : '';
    },
  };
}
