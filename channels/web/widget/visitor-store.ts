/**
 * Remembers who the visitor is for one site key: the visitor id and the session token (and the
 * conversation it opens), in localStorage under one key per site. Never the messages: history
 * always comes from the server. Storage can be unavailable (privacy modes, sandboxed frames);
 * the widget then simply starts a fresh session on each page.
 */
import { parseSite, type SiteSettings } from './api.js';

export interface StoredVisitor {
  visitorId?: string;
  token?: string;
  conversationId?: string;
}

export interface VisitorStore {
  load(): StoredVisitor;
  /** The site's settings from the last session (the launcher is drawn at once, in the site's colour). */
  loadSite(): SiteSettings | undefined;
  saveSite(site: SiteSettings): void;
  save(visitor: Required<StoredVisitor>): void;
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
    return { visitorId: pick('visitorId'), token: pick('token'), conversationId: pick('conversationId') };
  } catch {
    return {};
  }
}

export function createVisitorStore(siteKey: string): VisitorStore {
  const key = `${KEY_PREFIX}${siteKey}`;
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
        window.localStorage.setItem(key, JSON.stringify(visitor));
      } catch {
        // Storage full or disabled: the session still works for this page.
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
    onChange(listener) {
      window.addEventListener('storage', (event) => {
        if (event.key === key) listener(parse(event.newValue));
      });
    },
  };
}
