/**
 * The chat's session token: renewed a little before it expires, and once on a refused call; a
 * renewal that names another conversation (another tab started a new chat) switches to it.
 */
import type { ApiResult, Session, WidgetApi } from './api.js';
import type { VisitorStore } from './visitor-store.js';

// Renew a little before the token expires rather than after a refusal: across origins a 401
// without CORS headers is indistinguishable from a network failure.
const RENEW_BEFORE_EXPIRY_MS = 60_000;

export interface ConversationSwitch {
  token: string;
  conversationId: string;
  expiresAt: number | undefined;
}

export interface SessionKeeper {
  current(): Session;
  /** Takes a new token (and conversation) into the session. */
  update(patch: Partial<Session>): void;
  /** Starts the session again with the token it has (once at a time); false when the service refused or was unreachable. */
  renew(): Promise<boolean>;
  /** Stores the session for other tabs and the next page. */
  save(): void;
  /**
   * Calls the API with a current token. A refusal (401, or no readable answer while the
   * browser is online, which is how a cross-origin 401 looks) renews the session once and
   * retries once; the calls it wraps are safe to repeat.
   */
  authorized<Value>(call: (token: string) => Promise<ApiResult<Value>>): Promise<ApiResult<Value>>;
  /** The conversation ended on this device (the site's `reset()`): nothing is renewed or stored any more. */
  end(): void;
}

export function createSessionKeeper(
  api: WidgetApi,
  store: VisitorStore,
  initial: Session,
  /** A renewal named another conversation (its history exists). */
  onSwitch: (next: ConversationSwitch) => void,
): SessionKeeper {
  let session = initial;
  let renewal: Promise<boolean> | undefined;
  let ended = false;
  const save = (): void => {
    if (!ended) store.save({ visitorId: session.visitorId, token: session.token, conversationId: session.conversationId });
  };

  const renew = (): Promise<boolean> => {
    if (ended) return Promise.resolve(false);
    renewal ??= api
      .startSession({ visitorId: session.visitorId, token: session.token })
      .then((result) => {
        if (!result.ok || ended) return false;
        const { token, conversationId, visitorId, expiresAt } = result.value;
        session = { ...session, visitorId };
        if (conversationId === session.conversationId) session = { ...session, token, expiresAt };
        else onSwitch({ token, conversationId, expiresAt });
        save();
        return true;
      })
      .finally(() => {
        renewal = undefined;
      });
    return renewal;
  };

  return {
    current: () => session,
    update(patch) {
      session = { ...session, ...patch };
    },
    renew,
    save,
    end() {
      ended = true;
    },
    async authorized(call) {
      if (ended) return { ok: false, kind: 'network' };
      if (session.expiresAt !== undefined && Date.now() > session.expiresAt - RENEW_BEFORE_EXPIRY_MS) await renew();
      const first = await call(session.token);
      if (first.ok) return first;
      const refused = first.kind === 'status' ? first.status === 401 : navigator.onLine;
      if (!refused) return first;
      return (await renew()) ? call(session.token) : first;
    },
  };
}
