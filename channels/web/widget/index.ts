/**
 * The widget's entry point, bundled into one IIFE (`scripts/build-widget.ts`). It finds its own
 * <script data-site-key> tag, draws the launcher at once (in the colours the last session left)
 * and starts a session with the service the script came from in parallel; the panel
 * is built when the session is there. While the service cannot be reached the launcher stays and
 * says so when clicked, and sessions are tried again (sooner when the visitor clicks); the console
 * says the service is unreachable (once). If the service refuses this page's origin or the site
 * key (it answers a session request from any origin, so the refusal is readable), it logs one
 * console error for the site's developer saying which, and removes the launcher.
 */
import { createWidgetApi, type ApiResult, type Session, type WidgetApi } from './api.js';
import { createVisitorStore, type StoredVisitor } from './visitor-store.js';
import { reportToSiteDeveloper } from './developer-console.js';
import { readSignedInUser, setSignedInUser } from './signed-in-user.js';
import { mountWidget } from './widget.js';

// A service that is unreachable while the page loads is tried again, then every 30 s.
const SESSION_RETRY_DELAYS_MS = [2_000, 5_000, 10_000, 30_000];
const bootedSiteKeys = Symbol.for('assistant-chat-widget.booted');

type WindowWithRegistry = Window & { [bootedSiteKeys]?: Set<string> };

function findScript(): HTMLScriptElement | null {
  const current = document.currentScript;
  if (current instanceof HTMLScriptElement && current.dataset.siteKey) return current;
  return document.querySelector<HTMLScriptElement>('script[data-site-key]');
}

const domReady = (): Promise<void> =>
  document.body ? Promise.resolve() : new Promise((resolve) => document.addEventListener('DOMContentLoaded', () => resolve(), { once: true }));

async function startSession(api: WidgetApi, stored: StoredVisitor): Promise<ApiResult<Session>> {
  const result = await api.startSession({ visitorId: stored.visitorId, token: stored.token });
  // A stored token the service no longer accepts must not lock the visitor out: start afresh.
  if (!result.ok && result.kind === 'status' && (result.status === 400 || result.status === 401) && (stored.token || stored.visitorId)) {
    return api.startSession({});
  }
  return result;
}

function explainRefusal(siteKey: string, status: number, error: string): string {
  if (status === 403) {
    return `This page's origin (${window.location.origin}) is not allowed to use site key "${siteKey}". Add it to the site's allowed origins.`;
  }
  if (status === 404) return `Unknown site key "${siteKey}". Check the data-site-key attribute of the widget's script tag.`;
  return `The chat service refused to start a session (${status}): ${error}`;
}

async function boot(): Promise<void> {
  const script = findScript();
  const siteKey = script?.dataset.siteKey;
  if (!script || !siteKey) {
    reportToSiteDeveloper("The widget's <script> tag needs a data-site-key attribute.");
    return;
  }
  // The snippet pasted twice, or a single-page app re-running it: one widget per site key.
  const registry = ((window as WindowWithRegistry)[bootedSiteKeys] ??= new Set());
  if (registry.has(siteKey)) return;
  registry.add(siteKey);

  const serviceOrigin = new URL(script.src, window.location.href).origin;
  const api = createWidgetApi(serviceOrigin, siteKey);
  const store = createVisitorStore(siteKey);
  // A conversation saved for a signed-in user is never resumed on a page signed in as somebody else, or as nobody.
  const saved = store.load();
  if (saved.userId !== undefined && saved.userId !== readSignedInUser(siteKey)?.id) store.forget();
  let stored = store.load();
  // Bumped by reset(): a session asked for before it is not used.
  let generation = 0;
  const pending = startSession(api, stored);
  await domReady();
  let session: Session | undefined;
  const widget = mountWidget({
    api,
    origin: serviceOrigin,
    store,
    nonce: script.nonce || undefined,
    site: store.loadSite(),
    script,
    retry: () => void attempt(),
    // Signed in since the page loaded: the same visitor's session again, with who they are.
    identify: () => void (session ? startSession(api, store.load()).then((result) => result.ok && adopt(result.value)) : attempt()),
    reset: () => reset(true),
  });
  const adopt = (next: Session): void => {
    // Another user than the session's (the service started a fresh visitor): nothing of the last one's chat stays.
    if (session && next.visitorId !== session.visitorId) {
      reset(false);
      return;
    }
    session = next;
    store.save({ visitorId: next.visitorId, token: next.token, conversationId: next.conversationId });
    widget.adopt(next);
  };

  let failures = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let inFlight: Promise<void> | undefined;
  let explained = false;
  let done = false;
  const settle = async (result: ApiResult<Session>): Promise<void> => {
    if (result.ok) {
      session = result.value;
      store.save({ visitorId: session.visitorId, token: session.token, conversationId: session.conversationId });
      store.saveSite(session.site);
      done = true;
      // The event stream opens at once only for a conversation the visitor wrote in (an idle visitor's opens with the panel).
      await widget.start(session, store.follows(session.conversationId));
      return;
    }
    if (result.kind === 'status' && result.status < 500 && result.status !== 408 && result.status !== 429) {
      reportToSiteDeveloper(explainRefusal(siteKey, result.status, result.error));
      done = true;
      widget.remove();
      return;
    }
    if (!explained && navigator.onLine) {
      explained = true;
      reportToSiteDeveloper(
        `The chat service at ${serviceOrigin} is unreachable (${result.kind === 'network' ? 'no answer' : `HTTP ${result.status}`}); the widget keeps trying.`,
      );
    }
    widget.setUnavailable();
    clearTimeout(timer);
    timer = setTimeout(() => void attempt(), SESSION_RETRY_DELAYS_MS[Math.min(failures, SESSION_RETRY_DELAYS_MS.length - 1)]);
    failures += 1;
  };
  const attempt = (first?: Promise<ApiResult<Session>>): Promise<void> => {
    inFlight ??= (async () => {
      clearTimeout(timer);
      if (done) return;
      let asked = generation;
      let result = await (first ?? startSession(api, stored));
      // Reset while the session was asked for: ask again, without the conversation it ended.
      while (asked !== generation) {
        asked = generation;
        result = await startSession(api, stored);
      }
      await settle(result);
    })().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
  /**
   * The site's `reset()` (`signedOut`): this device's conversation ends (history, session, queued
   * messages, unread) and a fresh anonymous one starts; or, another user signed in, a fresh one of theirs.
   */
  function reset(signedOut: boolean): void {
    if (signedOut) {
      setSignedInUser(null);
      // The site's data was about the user who signed out.
      api.setData(undefined);
    }
    store.forget();
    stored = {};
    session = undefined;
    generation += 1;
    widget.reset();
    if (done) {
      done = false;
      void attempt();
    }
  }
  window.addEventListener('online', () => {
    if (failures > 0) void attempt();
  });
  await attempt(pending);
}

void boot();
