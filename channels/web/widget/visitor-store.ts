/**
 * Remembers who the visitor is for one site key: the visitor id and the session token (and the
 * conversation it opens, and the id of the site's signed-in user it was saved for), in
 * localStorage under one key per site, and the conversation the visitor wrote in (worth following
 * on every page). Never the messages: history always comes from the server.
 * `forget()` drops it with the unread count (the site's `reset()`, or a page signed in as
 * somebody else than the stored conversation's user). Storage can be unavailable (privacy modes, sandboxed frames);
 * the widget then simply starts a fresh session on each page.
 */
import { parseSite, type SiteSettings } from './api.js';
import { readSignedInUser } from './signed-in-user.js';

export interface StoredVisitor {
  visitorId?: string;
  token?: string;
  conversationId?: string;
  /** The signed-in user (their id, as the page named them) the session was saved for. */
  userId?: string;
}

/** Where the unread count is kept across reloads (session storage). */
export const unreadKey = (siteKey: string): string => `chat-widget-unread:${siteKey}`;

export interface VisitorStore {
  load(): StoredVisitor;
  /** The site's settings from the last session (the launcher is drawn at once, in the site's colour). */
  loadSite(): SiteSettings | undefined;
  saveSite(site: SiteSettings): void;
  /** Saves the session for the page's signed-in user (as the page names them now). */
  save(visitor: Required<Omit<StoredVisitor, 'userId'>>): void;
  /** Forgets the visitor, their unread count and the conversation they follow on this device. */
  forget(): void;
  /** The visitor wrote in `conversationId`: it has replies to follow (the event stream opens on each page, panel closed or not). */
  follow(conversationId: string): void;
  follows(conversationId: string): boolean;
  /** Calls `listener` when another tab changes this site's entry. */
  onChange(listener: (visitor: StoredVisitor) => void): void;
}

const KEY_PREFIX = 'chat-widget:';
const SITE_PREFIX = 'chat-widget-site:';

function parse(raw: string | null): StoredVisitor {
  if (!raw) return {};
  try {
    const value: unknown = JSON.parse(raw);
    if (typeof value !== 'object' || value === null) return {};
    const record = value as Record<string, unknown>;
    const pick = (key: string): string | undefined => (typeof record[key] === 'string' ? (record[key] as string) : undefined);
    return { visitorId: pick('visitorId'), token: pick('token'), conversationId: pick('conversationId'), userId: pick('userId') };
  } catch {
    return {};
  }
}

export function createVisitorStore(siteKey: string): VisitorStore {
  const key = `${KEY_PREFIX}${siteKey}`;
  const followKey = `chat-widget-follow:${siteKey}`;
  return {
    load() {
      try {
        return parse(window.localStorage.getItem(key));
      } catch {
        return {};
      }
    },
    save(visitor) {
      try {
        window.localStorage.setItem(key, JSON.stringify({ ...visitor, userId: readSignedInUser(siteKey)?.id }));
      } catch {
        // Storage full or disabled: the session still works for this page.
      }
    },
    forget() {
      try {
        window.localStorage.removeItem(key);
        window.localStorage.removeItem(followKey);
        window.sessionStorage.removeItem(unreadKey(siteKey));
      } catch {
        // Nothing was stored.
      }
    },
    loadSite() {
      try {
        const value: unknown = JSON.parse(window.localStorage.getItem(`${SITE_PREFIX}${siteKey}`) ?? 'null');
        return value !== null && typeof value === 'object' ? parseSite(value as Record<string, unknown>) : undefined;
      } catch {
        return undefined;
      }
    },
    saveSite(site) {
      try {
        window.localStorage.setItem(`${SITE_PREFIX}${siteKey}`, JSON.stringify(site));
      } catch {
        // As for the visitor: without storage the launcher waits for the site's colour.
      }
    },
    follow(conversationId) {
      try {
        window.localStorage.setItem(followKey, conversationId);
      } catch {
        // Without storage the next page opens the stream when the panel does.
      }
    },
    follows(conversationId) {
      try {
        return window.localStorage.getItem(followKey) === conversationId;
      } catch {
        return false;
      }
    },
    onChange(listener) {
      window.addEventListener('storage', (event) => {
        if (event.key === key) listener(parse(event.newValue));
      });
    },
  };
}
