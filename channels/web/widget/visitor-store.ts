/**
 * Remembers who the visitor is for one site key: the visitor id and the session token (and the
 * conversation it opens), in localStorage under one key per site. Never the messages: history
 * always comes from the server. Storage can be unavailable (privacy modes, sandboxed frames);
 * the widget then simply starts a fresh session on each page.
 */

export interface StoredVisitor {
  visitorId?: string;
  token?: string;
  conversationId?: string;
}

export interface VisitorStore {
  load(): StoredVisitor;
  save(visitor: Required<StoredVisitor>): void;
  /** Calls `listener` when another tab changes this site's entry. */
  onChange(listener: (visitor: StoredVisitor) => void): void;
}

const KEY_PREFIX = 'chat-widget:';

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
    onChange(listener) {
      window.addEventListener('storage', (event) => {
        if (event.key === key) listener(parse(event.newValue));
      });
    },
  };
}
