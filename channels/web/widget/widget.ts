/**
 * Mounts the widget: a host element with an open shadow root (so the page's CSS cannot reach in
 * and ours cannot leak out) and the launcher at once (never waiting for the service),
 * then, once a session is started, the panel and the chat (from the lazily loaded chat part,
 * parts.ts; opened while the service could not be reached since the page loaded, the panel comes
 * first, offline, and the chat joins it once a session is there). Owns opening and closing, focus, the
 * unread count (kept across reloads, shown on the launcher and in the page title while the panel
 * is closed, and the opt-in chime), the embed options of the script tag (`data-position="left"`
 * or `"right"`: by default right, left in a right-to-left language,
 * `data-theme="dark"` or `"auto"`, `data-sound="on"`, `data-api="Name"` for
 * `window.Name.open()/close()/onUnread(callback)/sound(on)`), and (on small
 * screens, where the panel fills the viewport) keeping the page behind it from scrolling.
 */
import type { Session, SiteSettings, WidgetApi } from './api.js';
import type { ChatPanel, ChatPart } from './chat-part.js';
import { chime } from './chime.js';
import { element } from './dom.js';
import { createLauncher, type Launcher } from './launcher.js';
import { createUnreadCounter, type UnreadCounter } from './unread-counter.js';
import { createPageScrollLock } from './page-scroll-lock.js';
import { loadPart } from './parts.js';
import { exposeScriptApi, type WidgetEvent } from './script-api.js';
import { readSignedInUser, setSignedInUser } from './signed-in-user.js';
import { chooseLanguage, ENGLISH, isRightToLeft, stringsFrom, type Catalogue } from './strings.js';
import { applyStyles } from './styles.js';
import { themeFor } from './theme.js';
import { unreadKey, type VisitorStore } from './visitor-store.js';

export interface MountOptions {
  api: WidgetApi;
  /** The service's origin (where the chat part is loaded from). */
  origin: string;
  store: VisitorStore;
  /** The embedding script's CSP nonce, for browsers without constructable stylesheets. */
  nonce: string | undefined;
  /** The site's settings from the last session, if any: the launcher's colour and language until the session says. */
  site: SiteSettings | undefined;
  /** The embedding script tag (its data-* embed options). */
  script: HTMLScriptElement;
  /** The visitor asked for the chat while there is no session: try now. */
  retry(): void;
  /** The site told who the visitor is (`identify`): a session with them, now. */
  identify(): void;
  /** The site's `reset()` (or `identify(null)`): forget this device's conversation and start a fresh anonymous one. */
  reset(): void;
}

export interface MountedWidget {
  /** A session is there: build the panel (opening it if the visitor already asked). `resume`: connect now, so replies count as unread. */
  start(session: Session, resume: boolean): Promise<void>;
  /** The service could not be reached: opened now, the panel takes messages to send once it is back (the launcher says so when even the chat part is missing). */
  setUnavailable(): void;
  /** The service refused this page: no widget. */
  remove(): void;
  /** A session for the same visitor (now signed in): the chat goes on with its token. */
  adopt(session: Session): void;
  /** The site's `reset()`: the chat, its panel and the unread count are gone; `start` begins anew. */
  reset(): void;
}

/** The chat part's file name (`chat-<hash>.js`), set by scripts/build-widget.ts. */
declare const WIDGET_CHAT_PART: string;

const HOST_TAG = 'assistant-chat-widget';
/** The site as the offline panel shows it before any session told the widget its settings. */
const OFFLINE_SITE: SiteSettings = {
  name: '',
  greeting: '',
  accentColor: undefined,
  language: undefined,
  maxMessageChars: undefined,
  maxUploadBytes: undefined,
};
/** Where the open panel fills the viewport (panel-styles.ts). */
const SMALL_SCREEN = '(max-width: 479.98px)';
const PANEL_ID = 'chat-panel';

/** The chat part, fetched at once (beside the session) so the panel never waits on it; `onLoaded` once it is there. */
function createPartLoader(serviceOrigin: string, onLoaded: (part: ChatPart) => void) {
  let loading: Promise<ChatPart> | undefined;
  let loaded: ChatPart | undefined;
  const load = (): Promise<ChatPart> =>
    (loading ??= loadPart<ChatPart>(serviceOrigin, WIDGET_CHAT_PART).then(
      (part) => {
        if (!loaded) onLoaded(part);
        loaded = part;
        return part;
      },
      (error: unknown) => {
        loading = undefined;
        throw error;
      },
    ));
  void load().catch(() => undefined);
  return { load, loaded: () => loaded };
}

/** The shadow root's styles in the site's colours, with the chat part's rules once it is there (fetched at once). */
function styleWithParts(root: ShadowRoot, options: Pick<MountOptions, 'site' | 'nonce' | 'origin'>) {
  let styledSite = options.site;
  let partCss = '';
  const style = (site: SiteSettings | undefined): void => {
    styledSite = site;
    applyStyles(root, themeFor(site?.accentColor), options.nonce, partCss);
  };
  style(options.site);
  const parts = createPartLoader(options.origin, (part) => {
    partCss = part.css;
    style(styledSite);
  });
  return { style, parts };
}

/**
 * Opening and closing the panel: focus, the unread count, on a phone the page modal (inert page,
 * no scrolling behind it), and the visitor's ask to open it before there is one (the launcher's
 * `note` says meanwhile: connecting, or the service is unreachable).
 */
function createPanelState(
  host: HTMLElement,
  launcher: Launcher,
  note: HTMLElement,
  unread: UnreadCounter,
  emit: (event: WidgetEvent, detail?: unknown) => void,
) {
  let isOpen = false;
  let wanted = false;
  let shown: ChatPanel | undefined;
  let prefilled: string | undefined;
  let pageModal: ReturnType<ChatPart['createPageModal']> | undefined;
  const smallScreen = window.matchMedia(SMALL_SCREEN);
  const scrollLock = createPageScrollLock();
  const update = (): void => {
    const covering = isOpen && smallScreen.matches;
    if (covering) scrollLock.lock();
    else scrollLock.release();
    pageModal?.set(covering ? shown?.panel.element : undefined);
  };
  smallScreen.addEventListener('change', update);
  const shut = (): void => {
    if (!isOpen || !shown) return;
    isOpen = false;
    shown.panel.show(false);
    update();
    launcher.setExpanded(false);
    launcher.element.focus();
    emit('close');
  };
  return {
    isOpen: () => isOpen,
    /** The visitor asked for the chat while there was no panel to open. */
    wanted: () => wanted,
    /** Asked for with no panel yet: the launcher says `text` until there is one. */
    ask(text: string): void {
      wanted = true;
      note.hidden = false;
      note.textContent = text;
    },
    /** The launcher's note, if it shows, says `text` now. */
    retell(text: string): void {
      if (!note.hidden) note.textContent = text;
    },
    shown: () => shown,
    set(panel: ChatPanel, part: ChatPart): void {
      shown = panel;
      pageModal ??= part.createPageModal(host);
      if (prefilled) panel.panel.restoreInput(prefilled);
    },
    /** Words for the composer (the site's `prefill`): put in now, or when the panel is built; never over what the visitor typed. */
    prefill(text: string): void {
      prefilled = text;
      shown?.panel.restoreInput(text);
    },
    /** A reply arrived (`chimeOn`: the chime is on): unread while closed, heard only when it would not be seen. */
    replied(preview: string, chimeOn: boolean): void {
      emit('message', { text: preview });
      if (chimeOn && (!isOpen || document.hidden)) chime();
      if (isOpen) return;
      unread.set(unread.count() + 1);
      launcher.setPreview(preview);
    },
    open(): void {
      if (!shown) return;
      wanted = false;
      note.hidden = true;
      isOpen = true;
      unread.set(0);
      launcher.setPreview(undefined);
      launcher.setExpanded(true);
      shown.panel.show(true);
      update();
      shown.chat()?.connect();
      shown.panel.focusInitial();
      emit('open');
    },
    close(): void {
      wanted = false;
      note.hidden = true;
      shut();
    },
    /** The conversation ended on this device: its chat stops and its panel goes (closed first). */
    drop(): void {
      shut();
      shown?.chat()?.end();
      shown?.panel.element.remove();
      shown = undefined;
      prefilled = undefined;
      unread.set(0);
      launcher.setPreview(undefined);
    },
  };
}

/** The widget's language and direction on its root; bottom-left where the page reads right to left, unless the site says where (`data-position`). */
function speakIn(container: HTMLElement, language: string, position: string | undefined): void {
  container.lang = language;
  container.dir = isRightToLeft(language) ? 'rtl' : 'ltr';
  container.classList.toggle('left', position === 'left' || (position !== 'right' && isRightToLeft(language)));
}

/** The widget's element on the page, its shadow root, and the palette the script tag asks for (`data-theme`). */
function createHost(themeOption: string | undefined) {
  const host = document.createElement(HOST_TAG);
  return { host, root: host.attachShadow({ mode: 'open' }), theme: themeOption === 'dark' || themeOption === 'auto' ? themeOption : 'light' };
}

/** The site's script API (`data-api`) on the widget: opening and closing, the unread count, the chime, prefill, hiding the launcher, who the visitor is. */
function exposeApi(
  options: MountOptions,
  widget: {
    open(): void;
    close(): void;
    unread: UnreadCounter;
    panels(): ReturnType<typeof createPanelState>;
    sound(on: boolean): void;
    container(): HTMLElement;
  },
) {
  const { dataset } = options.script;
  const { open, close, unread, panels } = widget;
  return exposeScriptApi(dataset.api, {
    open,
    close,
    onUnread: unread.listen,
    offUnread: unread.unlisten,
    state: () => ({ open: panels().isOpen(), unread: unread.count(), signedIn: readSignedInUser(dataset.siteKey ?? '') !== undefined }),
    sound: widget.sound,
    prefill: (text) => panels().prefill(text),
    setHidden: (hidden) => (hidden && close(), widget.container().classList.toggle('no-launcher', hidden)),
    identify: (user) => (setSignedInUser(user), options.identify()),
    reset: () => options.reset(),
    setData: (data) => options.api.setData(data),
  });
}

export function mountWidget(options: MountOptions): MountedWidget {
  const { dataset } = options.script;
  const browserLanguages = [...(navigator.languages ?? []), navigator.language];
  // A site that sets a language forces it; otherwise the visitor's browser decides.
  const languageFor = (site: SiteSettings | undefined): string => chooseLanguage([site?.language, ...browserLanguages]);
  let language = languageFor(options.site);
  let words: Promise<Catalogue> = options.api.catalogue(language);
  let catalogue = ENGLISH;
  let strings = stringsFrom(ENGLISH);

  const { host, root, theme } = createHost(dataset.theme);
  const { style, parts } = styleWithParts(root, options);
  // A session whose chat part could not be loaded: tried again when the visitor opens the chat.
  let waitingStart: (() => void) | undefined;
  const retry = (): void => (waitingStart ? waitingStart() : options.retry());

  let sound = dataset.sound === 'on';
  // What the launcher says while there is no panel: connecting, or the service is unreachable.
  const note = element('div', { className: 'launcher-note', attributes: { role: 'status', hidden: '' } });
  let unavailable = false;
  let started = false;

  const buildPanel = (part: ChatPart, site: SiteSettings): ChatPanel => {
    const built = part.createChatPanel({ site, catalogue, strings, panelId: PANEL_ID, onClose: close, onQueued: retry });
    container.append(built.panel.element);
    panels.set(built, part);
    return built;
  };
  /** Opens the panel there is, or (the service unreachable since the page loaded) one offline: false when there is none yet. */
  const showPanel = (): boolean => {
    const part = parts.loaded();
    if (!panels.shown() && unavailable && part) {
      buildPanel(part, options.site ?? { ...OFFLINE_SITE, name: window.location.hostname, greeting: strings.hello }).panel.setQueued(true);
    }
    if (!panels.shown()) return false;
    panels.open();
    return true;
  };
  const open = (): void => {
    if (sound) chime(true);
    if (showPanel()) {
      if (!started) retry();
      return;
    }
    panels.ask(unavailable ? strings.unavailable : strings.connecting);
    retry();
  };
  const close = (): void => panels.close();

  const launcher = createLauncher(strings, PANEL_ID, () => (panels.wanted() && !panels.shown() ? close() : open()));
  const unread = createUnreadCounter(launcher, unreadKey(dataset.siteKey ?? ''));
  const emit = exposeApi(options, { open, close, unread, panels: () => panels, sound: (on) => void (sound = on), container: () => container });
  const panels = createPanelState(host, launcher, note, unread, emit);
  const container = element('div', { className: `root theme-${theme}` }, [launcher.element, note]);
  const speak = (): void => speakIn(container, language, dataset.position);
  speak();
  root.append(container);
  document.body.append(host);
  void words.then((loaded) => {
    if (started || panels.shown()) return;
    catalogue = loaded;
    strings = stringsFrom(loaded);
    launcher.setStrings(strings);
    panels.retell(unavailable ? strings.unavailable : strings.connecting);
  });
  unread.restore();

  const mounted: MountedWidget = {
    setUnavailable() {
      unavailable = true;
      // Asked for while the first session was being tried: the panel opens offline.
      if (panels.wanted() && showPanel()) return;
      panels.retell(strings.unavailable);
    },
    remove() {
      host.remove();
      unread.untitle();
    },
    adopt: (session) => panels.shown()?.chat()?.useSession(session),
    reset() {
      panels.drop();
      started = false;
      waitingStart = undefined;
      note.hidden = true;
    },
    async start(session, resume) {
      if (started) return;
      waitingStart = undefined;
      const { site } = session;
      style(site);
      let part: ChatPart;
      try {
        part = await parts.load();
      } catch {
        mounted.setUnavailable();
        waitingStart = () => void mounted.start(session, resume);
        return;
      }
      if (!panels.shown() && languageFor(site) !== language) {
        language = languageFor(site);
        words = options.api.catalogue(language);
      }
      const loaded = await words;
      if (started) return;
      started = true;
      let shown = panels.shown();
      if (!shown) {
        catalogue = loaded;
        strings = stringsFrom(loaded);
        speak();
        launcher.setStrings(strings);
        shown = buildPanel(part, site);
      } else shown.panel.setSite(site);
      note.hidden = true;
      const chat = shown.start({
        ...options,
        session,
        language,
        onReply: (preview) => panels.replied(preview, sound),
        onSent: (text) => emit('sent', { text }),
      });
      if (panels.wanted()) panels.open();
      else if (panels.isOpen() || resume || unread.count() > 0) chat.connect();
    },
  };
  return mounted;
}
