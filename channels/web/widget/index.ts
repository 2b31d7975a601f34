/**
 * The widget's entry point, bundled into one IIFE (`scripts/build-widget.ts`). It finds its own
 * <script data-site-key> tag, starts a session with the service the script came from, and
 * mounts the widget. If the service refuses this page's origin or the site key, it logs one
 * console error for the site's developer and shows the visitor nothing.
 */
import { createWidgetApi, type ApiResult, type Session, type WidgetApi } from './api.js';
import { createVisitorStore, type StoredVisitor } from './visitor-store.js';
import { reportToSiteDeveloper } from './developer-console.js';
import { mountWidget } from './widget.js';

// A service that is briefly unreachable while the page loads gets a few more chances.
const SESSION_RETRY_DELAYS_MS = [2_000, 8_000, 30_000];
const bootedSiteKeys = Symbol.for('assistant-chat-widget.booted');

type WindowWithRegistry = Window & { [bootedSiteKeys]?: Set<string> };

function findScript(): HTMLScriptElement | null {
  const current = document.currentScript;
  if (current instanceof HTMLScriptElement && current.dataset.siteKey) return current;
  return document.querySelector<HTMLScriptElement>('script[data-site-key]');
}

const wait = (milliseconds: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, milliseconds));

const domReady = (): Promise<void> =>
  document.body ? Promise.resolve() : new Promise((resolve) => document.addEventListener('DOMContentLoaded', () => resolve(), { once: true }));

async function startSession(api: WidgetApi, stored: StoredVisitor, onUnreachable: () => void): Promise<ApiResult<Session>> {
  let result = await api.startSession({ visitorId: stored.visitorId, token: stored.token });
  // A stored token the service no longer accepts must not lock the visitor out: start afresh.
  if (!result.ok && result.kind === 'status' && (result.status === 400 || result.status === 401) && (stored.token || stored.visitorId)) {
    result = await api.startSession({});
  }
  for (const delay of SESSION_RETRY_DELAYS_MS) {
    if (result.ok || (result.kind === 'status' && result.status < 500)) break;
    if (result.kind === 'network' && navigator.onLine) onUnreachable();
    await wait(delay);
    result = await api.startSession({ visitorId: stored.visitorId, token: stored.token });
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
  const stored = store.load();
  let explained = false;
  // A refused origin gets no CORS headers, so its 403 reads as "no answer": say what to check.
  const explainUnreachable = (): void => {
    if (explained) return;
    explained = true;
    reportToSiteDeveloper(
      `Could not reach the chat service at ${serviceOrigin}. If this page's origin (${window.location.origin}) is not among the allowed origins of site key "${siteKey}", add it.`,
    );
  };
  const result = await startSession(api, stored, explainUnreachable);
  if (!result.ok) {
    if (result.kind === 'status') reportToSiteDeveloper(explainRefusal(siteKey, result.status, result.error));
    return;
  }
  const session = result.value;
  store.save({ visitorId: session.visitorId, token: session.token, conversationId: session.conversationId });
  await domReady();
  mountWidget({ api, store, session, nonce: script.nonce || undefined, resume: Boolean(stored.token) });
}

void boot();
