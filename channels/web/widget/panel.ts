/**
 * The chat panel: a header with the site's name, a subtitle saying who the visitor is talking to
 * (the assistant, or the teammate who took the conversation over), "New chat" and close buttons, an offline
 * banner (and one saying messages wait while the service could not be reached since the page loaded), the message log, a quiet "Reconnecting…" line under it while the service is
 * unreachable, and the composer (a labelled textarea and a Send button). Enter sends,
 * Shift+Enter starts a new line, Escape asks to close. "New chat" asks first (one tap
 * no longer wipes the conversation). It reports what the visitor does and never talks to the
 * server itself.
 */
import type { Sender } from './api.js';
import { element, icon } from './dom.js';
import { createMessageList, type MessageList } from './message-list.js';
import type { WidgetStrings } from './strings.js';

export interface PanelActions {
  onClose(): void;
  onNewChat(): void;
  onSend(text: string): void;
  /** The composer changed: true while it holds text. */
  onTyping?(typing: boolean): void;
}

export interface Panel {
  readonly element: HTMLElement;
  readonly list: MessageList;
  /** The message box (files pasted into it are attached). */
  readonly input: HTMLTextAreaElement;
  show(visible: boolean): void;
  /**
   * Moves focus into the panel: to the input where a keyboard is at hand; on touch devices and
   * small screens to the dialog itself, so opening does not pop up the on-screen keyboard.
   */
  focusInitial(): void;
  clearInput(): void;
  /** Puts text back into an empty composer (a message that could not be sent as it was). */
  restoreInput(text: string): void;
  setComposerError(text: string | undefined): void;
  setOffline(offline: boolean): void;
  /** The service could not be reached since the page loaded: "We'll send your message when we're back". */
  setQueued(queued: boolean): void;
  /** Shows (or clears) the "Reconnecting…" line. */
  setReconnecting(reconnecting: boolean): void;
  /** Who the visitor is talking to: the header's subtitle and avatar follow. */
  setHolder(holder: Sender): void;
  /** The site's name and greeting (a panel opened offline learns them when the session arrives). */
  setSite(site: { name: string; greeting: string }): void;
}

const COUNTER_THRESHOLD = 0.8;
/** Where the panel fills the viewport (panel-styles.ts and widget.ts use the same width). */
const SMALL_SCREEN = '(max-width: 479.98px)';
const TOUCH_ONLY = '(hover: none) and (pointer: coarse)';
const MAX_INPUT_HEIGHT_PX = 132;

/** "New chat?" with Start over and Cancel: asked before the conversation is gone. */
function createNewChatConfirm(strings: WidgetStrings, panelId: string, onConfirm: () => void, focusInput: () => void) {
  const confirmText = element('span', { text: strings.confirmNewChat, attributes: { id: `${panelId}-confirm` } });
  const confirmButton = element('button', { className: 'danger', text: strings.startOver, attributes: { type: 'button' } });
  const cancelButton = element('button', { text: strings.cancel, attributes: { type: 'button' } });
  const confirm = element('div', { className: 'confirm', attributes: { role: 'group', 'aria-labelledby': confirmText.id, hidden: '' } }, [
    confirmText,
    confirmButton,
    cancelButton,
  ]);
  const dismiss = (): void => {
    confirm.hidden = true;
    focusInput();
  };
  confirmButton.addEventListener('click', () => {
    confirm.hidden = true;
    onConfirm();
  });
  cancelButton.addEventListener('click', dismiss);
  return {
    element: confirm,
    ask(): void {
      confirm.hidden = false;
      confirmButton.focus();
    },
    dismiss,
  };
}

/** The header: the site's (or the holding teammate's) initial, the site's name, who the visitor talks to, "New chat" and close. */
function createHeader(strings: WidgetStrings, siteName: string, panelId: string, actions: { onNewChat(): void; onClose(): void }) {
  const iconButton = (name: 'compose' | 'close', label: string, onClick: () => void): HTMLButtonElement => {
    // Named by its title alone (a tooltip too): an aria-label beside it would be read again as the description.
    const button = element('button', { className: 'icon-button', attributes: { type: 'button', title: label } }, [icon(name)]);
    button.addEventListener('click', onClick);
    return button;
  };
  const initial = (name: string): string => (name.trim()[0] ?? '?').toUpperCase();
  const avatar = element('div', { className: 'avatar', text: initial(siteName), attributes: { 'aria-hidden': 'true' } });
  // A live region: a screen reader hears it when a teammate takes over or hands back.
  const subtitle = element('p', { className: 'subtitle', text: strings.talkingToAssistant, attributes: { id: `${panelId}-subtitle`, 'aria-live': 'polite' } });
  const title = element('h2', { className: 'title', text: siteName, attributes: { id: `${panelId}-title` } });
  let holderName: string | undefined;
  const header = element('div', { className: 'header' }, [
    avatar,
    element('div', { className: 'heading' }, [title, subtitle]),
    iconButton('compose', strings.newChat, actions.onNewChat),
    iconButton('close', strings.closeChat, actions.onClose),
  ]);
  return {
    element: header,
    setHolder(holder: Sender): void {
      const teammate = holder.kind === 'teammate';
      const text = teammate ? strings.talkingToTeammate(holder.name, holder.team) : strings.talkingToAssistant;
      if (subtitle.textContent !== text) subtitle.textContent = text;
      holderName = teammate ? holder.name : undefined;
      avatar.textContent = initial(holderName ?? title.textContent ?? '');
      avatar.classList.toggle('teammate', teammate);
    },
    setName(name: string): void {
      title.textContent = name;
      if (holderName === undefined) avatar.textContent = initial(name);
    },
  };
}

export function createPanel(
  strings: WidgetStrings,
  site: { name: string; greeting: string; maxMessageChars: number | undefined },
  panelId: string,
  actions: PanelActions,
  /** The attach button (before the input) and the attachments tray (above the composer): see attachments.ts. */
  attachments?: { button: HTMLElement; tray: HTMLElement },
): Panel {
  const list = createMessageList(strings, site.name, site.greeting);
  const header = createHeader(strings, site.name, panelId, { onNewChat: () => askNewChat(), onClose: actions.onClose });
  const banner = element('div', { className: 'banner', text: strings.offline, attributes: { role: 'status', hidden: '' } });
  const queued = element('div', { className: 'waiting-banner', text: strings.offlineQueued, attributes: { role: 'status', hidden: '' } });
  // "New chat" asks first: the conversation is gone once confirmed.
  const newChat = createNewChatConfirm(strings, panelId, actions.onNewChat, () => input.focus());
  const { element: confirm } = newChat;
  const askNewChat = newChat.ask;
  const dismissConfirm = newChat.dismiss;
  // Stays in the tree (empty when connected) so screen readers announce the text when it appears.
  const connection = element('div', { className: 'connection', attributes: { role: 'status', 'aria-live': 'polite' } });

  const input = element('textarea', {
    className: 'input',
    attributes: { id: `${panelId}-input`, rows: '1', placeholder: strings.placeholder, autocomplete: 'off', enterkeyhint: 'send' },
  });
  const label = element('label', { className: 'sr-only', text: strings.inputLabel, attributes: { for: input.id } });
  const send = element('button', { className: 'send', attributes: { type: 'submit', title: strings.send } }, [icon('send')]);
  const composer = element('form', { className: 'composer' }, [label, ...(attachments ? [attachments.button] : []), input, send]);
  const composerError = element('span', { className: 'composer-error', attributes: { role: 'status' } });
  const counter = element('span', { className: 'counter', attributes: { 'aria-hidden': 'true' } });
  const footer = element('div', { className: 'composer-footer' }, [composerError, counter]);

  const panel = element(
    'div',
    {
      className: 'panel',
      attributes: {
        id: panelId,
        role: 'dialog',
        'aria-modal': 'false',
        'aria-labelledby': `${panelId}-title`,
        'aria-describedby': `${panelId}-subtitle`,
        tabindex: '-1',
        hidden: '',
      },
    },
    [header.element, confirm, banner, queued, list.element, list.announcer, connection, ...(attachments ? [attachments.tray] : []), composer, footer],
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
    actions.onTyping?.(input.value.trim() !== '');
  });
  panel.addEventListener('keydown', (event) => {
    if (event.key !== 'Escape') return;
    event.preventDefault();
    if (confirm.hidden) actions.onClose();
    else dismissConfirm();
  });

  return {
    element: panel,
    list,
    input,
    show(visible) {
      panel.hidden = !visible;
      if (visible) {
        list.scrollToEnd();
        resizeInput();
      }
    },
    focusInitial() {
      if (window.matchMedia(SMALL_SCREEN).matches || window.matchMedia(TOUCH_ONLY).matches) panel.focus();
      else input.focus();
    },
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
    setQueued(waiting) {
      queued.hidden = !waiting;
    },
    setReconnecting(reconnecting) {
      connection.textContent = reconnecting ? strings.reconnecting : '';
    },
    setHolder: header.setHolder,
    setSite(next) {
      header.setName(next.name);
      list.setSite(next.name, next.greeting);
    },
  };
}
