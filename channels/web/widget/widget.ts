/**
 * Mounts the widget: a host element with an open shadow root (so the page's CSS cannot reach in
 * and ours cannot leak out) and the launcher at once (never waiting for the service),
 * then, once a session is started, the panel and the chat. Owns opening and closing, focus, the
 * unread count (kept across reloads, shown on the launcher and in the page title while the panel
 * is closed, and the opt-in chime), the embed options of the script tag (`data-position="left"`,
 * `data-theme="dark"` or `"auto"`, `data-sound="on"`, `data-api="Name"` for
 * `window.Name.open()/close()/onUnread(callback)/sound(on)`), and (on small
 * screens, where the panel fills the viewport) keeping the page behind it from scrolling.
 */
import type { Session, SiteSettings, WidgetApi } from './api.js';
import { attachmentStringsFrom } from './attachment-strings.js';
import { createAttachments } from './attachments.js';
import { createChat } from './chat.js';
import { chime } from './chime.js';
import { element } from './dom.js';
import { createLauncher } from './launcher.js';
import { createPageScrollLock } from './page-scroll-lock.js';
import { createPanel, SMALL_SCREEN } from './panel.js';
import { chooseLanguage, ENGLISH, isRightToLeft, stringsFrom, type Catalogue } from './strings.js';
import { applyStyles } from './styles.js';
import { themeFor } from './theme.js';
import type { VisitorStore } from './visitor-store.js';

export interface MountOptions {
  api: WidgetApi;
  store: VisitorStore;
  /** The embedding script's CSP nonce, for browsers without constructable stylesheets. */
  nonce: string | undefined;
  /** The site's settings from the last session, if any: the launcher's colour and language until the session says. */
  site: SiteSettings | undefined;
  /** The embedding script tag (its data-* embed options). */
  script: HTMLScriptElement;
  /** The visitor asked for the chat while there is no session: try now. */
  retry(): void;
}

export interface MountedWidget {
  /** A session is there: build the panel (opening it if the visitor already asked). `resume`: connect now, so replies count as unread. */
  start(session: Session, resume: boolean): Promise<void>;
  /** The service could not be reached: the launcher says so when clicked. */
  setUnavailable(): void;
  /** The service refused this page: no widget. */
  remove(): void;
}

interface ChatApi {
  open(): void;
  close(): void;
  onUnread(callback: (count: number) => void): void;
  /** Turns the chime for replies on or off (`data-sound="on"` starts it on). */
  sound(on: boolean): void;
}

const HOST_TAG = 'assistant-chat-widget';
const PANEL_ID = 'chat-panel';
const API_NAME = /^[A-Za-z_$][\w$]{0,39}$/;

export function mountWidget(options: MountOptions): MountedWidget {
  const { dataset } = options.script;
  const browserLanguages = [...(navigator.languages ?? []), navigator.language];
  // A site that sets a language forces it; otherwise the visitor's browser decides.
  const languageFor = (site: SiteSettings | undefined): string => chooseLanguage([site?.language, ...browserLanguages]);
  let language = languageFor(options.site);
  let words: Promise<Catalogue> = options.api.catalogue(language);
  let strings = stringsFrom(ENGLISH);

  const host = document.createElement(HOST_TAG);
  const root = host.attachShadow({ mode: 'open' });
  const theme = dataset.theme === 'dark' || dataset.theme === 'auto' ? dataset.theme : 'light';
  const style = (site: SiteSettings | undefined): void => applyStyles(root, themeFor(site?.accentColor), options.nonce);
  style(options.site);

  let isOpen = false;
  let wantOpen = false;
  let sound = dataset.sound === 'on';
  let unread = 0;
  const unreadListeners: ((count: number) => void)[] = [];
  const unreadKey = `chat-widget-unread:${dataset.siteKey ?? ''}`;
  // Our "(2) " in front of the page's title: taken off again without assuming the page kept its title.
  const untitled = (): string => document.title.replace(/^\(\d+\+?\) /, '');
  const setUnread = (count: number): void => {
    unread = count;
    launcher.setUnread(count);
    // A counter in the tab's title, as messengers do, while the panel is closed.
    document.title = count > 0 ? `(${count > 9 ? '9+' : count}) ${untitled()}` : untitled();
    try {
      if (count > 0) sessionStorage.setItem(unreadKey, String(count));
      else sessionStorage.removeItem(unreadKey);
    } catch {
      // No storage: the count lasts as long as the page.
    }
    for (const listener of unreadListeners) listener(count);
  };

  const smallScreen = window.matchMedia(SMALL_SCREEN);
  const scrollLock = createPageScrollLock();
  const updateScrollLock = (): void => {
    if (isOpen && smallScreen.matches) scrollLock.lock();
    else scrollLock.release();
  };
  smallScreen.addEventListener('change', updateScrollLock);

  // What the launcher says while there is no session: connecting, or the service is unreachable.
  const note = element('div', { className: 'launcher-note', attributes: { role: 'status', hidden: '' } });
  let unavailable = false;
  let started: { open(): void; close(): void } | undefined;

  const open = (): void => {
    if (sound) chime(true);
    if (!started) {
      wantOpen = true;
      note.hidden = false;
      note.textContent = unavailable ? strings.unavailable : strings.connecting;
      options.retry();
      return;
    }
    started.open();
  };
  const close = (): void => {
    wantOpen = false;
    note.hidden = true;
    started?.close();
  };

  const launcher = createLauncher(strings, PANEL_ID, () => (wantOpen && !started ? close() : open()));
  const container = element(
    'div',
    {
      className: `root theme-${theme}${dataset.position === 'left' ? ' left' : ''}`,
      attributes: { lang: language, dir: isRightToLeft(language) ? 'rtl' : 'ltr' },
    },
    [launcher.element, note],
  );
  root.append(container);
  document.body.append(host);
  void words.then((catalogue) => {
    if (started) return;
    strings = stringsFrom(catalogue);
    launcher.setStrings(strings);
    if (!note.hidden) note.textContent = unavailable ? strings.unavailable : strings.connecting;
  });
  try {
    const stored = Number(sessionStorage.getItem(unreadKey));
    if (stored > 0) setUnread(stored);
  } catch {
    // No storage.
  }

  // A small script API only when the site names it: the widget adds no global of its own.
  const apiName = dataset.api;
  if (apiName && API_NAME.test(apiName) && !(apiName in window)) {
    const chatApi: ChatApi = {
      open,
      close,
      onUnread(callback) {
        unreadListeners.push(callback);
        callback(unread);
      },
      sound(on) {
        sound = on;
      },
    };
    Object.defineProperty(window, apiName, { value: Object.freeze(chatApi), configurable: true });
  }

  return {
    setUnavailable() {
      unavailable = true;
      if (!note.hidden) note.textContent = strings.unavailable;
    },
    remove() {
      host.remove();
      document.title = untitled();
    },
    async start(session, resume) {
      if (started) return;
      const { site } = session;
      style(site);
      if (languageFor(site) !== language) {
        language = languageFor(site);
        words = options.api.catalogue(language);
      }
      const catalogue = await words;
      if (started) return;
      strings = stringsFrom(catalogue);
      container.lang = language;
      container.dir = isRightToLeft(language) ? 'rtl' : 'ltr';
      launcher.setStrings(strings);
      note.hidden = true;

      const attachmentStrings = attachmentStringsFrom(catalogue);
      const attachments = createAttachments({
        strings: attachmentStrings,
        maxBytes: site.maxUploadBytes,
        upload: (file, onProgress, signal) => chat.upload(file, onProgress, signal),
      });
      const panel = createPanel(
        strings,
        site,
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
      attachments.acceptPaste(panel.input);
      const chat = createChat({
        api: options.api,
        store: options.store,
        session,
        strings,
        panel,
        attachments: { tray: attachments, strings: attachmentStrings },
        language,
        onReply(preview) {
          // Heard only when it would not be seen: the panel closed, or the tab in the background.
          if (sound && (!isOpen || document.hidden)) chime();
          if (isOpen) return;
          setUnread(unread + 1);
          launcher.setPreview(preview);
        },
      });
      container.append(panel.element);
      started = {
        open() {
          isOpen = true;
          wantOpen = false;
          setUnread(0);
          launcher.setPreview(undefined);
          launcher.setExpanded(true);
          panel.show(true);
          updateScrollLock();
          chat.connect();
          panel.focusInitial();
        },
        close() {
          if (!isOpen) return;
          isOpen = false;
          panel.show(false);
          updateScrollLock();
          launcher.setExpanded(false);
          launcher.element.focus();
        },
      };
      if (wantOpen) started.open();
      else if (resume || unread > 0) chat.connect();
    },
  };
}
