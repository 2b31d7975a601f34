/**
 * Mounts the widget for a started session: a host element with an open shadow root (so the
 * page's CSS cannot reach in and ours cannot leak out), the launcher and the panel. Owns
 * opening and closing, focus, the unread count, and (on small screens, where the panel fills
 * the viewport) keeping the page behind it from scrolling while it is open.
 */
import type { Session, WidgetApi } from './api.js';
import { attachmentStringsFor } from './attachment-strings.js';
import { createAttachments } from './attachments.js';
import { createChat } from './chat.js';
import { element } from './dom.js';
import { createLauncher } from './launcher.js';
import { createPageScrollLock } from './page-scroll-lock.js';
import { createPanel, SMALL_SCREEN } from './panel.js';
import { chooseLanguage, stringsFor } from './strings.js';
import { applyStyles } from './styles.js';
import { themeFor } from './theme.js';
import type { VisitorStore } from './visitor-store.js';

export interface MountOptions {
  api: WidgetApi;
  store: VisitorStore;
  session: Session;
  /** The embedding script's CSP nonce, for browsers without constructable stylesheets. */
  nonce: string | undefined;
  /** The visitor had a conversation before this page: connect now, so replies count as unread. */
  resume: boolean;
}

const HOST_TAG = 'assistant-chat-widget';
const PANEL_ID = 'chat-panel';

export function mountWidget(options: MountOptions): void {
  const { site } = options.session;
  const language = chooseLanguage([site.language, ...(navigator.languages ?? []), navigator.language]);
  const strings = stringsFor(language);

  const host = document.createElement(HOST_TAG);
  const root = host.attachShadow({ mode: 'open' });
  applyStyles(root, themeFor(site.accentColor), options.nonce);

  let isOpen = false;
  let unread = 0;
  const smallScreen = window.matchMedia(SMALL_SCREEN);
  const scrollLock = createPageScrollLock();
  const updateScrollLock = (): void => {
    if (isOpen && smallScreen.matches) scrollLock.lock();
    else scrollLock.release();
  };
  smallScreen.addEventListener('change', updateScrollLock);

  const open = (): void => {
    isOpen = true;
    unread = 0;
    launcher.setUnread(0);
    launcher.setExpanded(true);
    panel.show(true);
    updateScrollLock();
    chat.connect();
    panel.focusInitial();
  };
  const close = (): void => {
    isOpen = false;
    panel.show(false);
    updateScrollLock();
    launcher.setExpanded(false);
    launcher.element.focus();
  };

  const launcher = createLauncher(strings, PANEL_ID, open);
  const attachmentStrings = attachmentStringsFor(language);
  const attachments = createAttachments({
    strings: attachmentStrings,
    maxBytes: site.maxUploadBytes,
    upload: (file, onProgress, signal) => chat.upload(file, onProgress, signal),
  });
  const panel = createPanel(
    strings,
    site,
    language,
    PANEL_ID,
    {
      onClose: close,
      onNewChat: () => void chat.newChat(),
      onSend: (text) => chat.send(text),
      onTyping: (typing) => chat.typing(typing),
    },
    attachments,
  );
  attachments.acceptDrops(panel.element);
  const chat = createChat({
    api: options.api,
    store: options.store,
    session: options.session,
    strings,
    panel,
    attachments: { tray: attachments, strings: attachmentStrings },
    onReply() {
      if (isOpen) return;
      unread += 1;
      launcher.setUnread(unread);
    },
  });

  root.append(element('div', { className: 'root', attributes: { lang: language } }, [launcher.element, panel.element]));
  document.body.append(host);
  if (options.resume) chat.connect();
}
