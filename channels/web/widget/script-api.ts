/**
 * The script API a site names with `data-api="ShopChat"` (the widget adds no global otherwise).
 * It works before the script has loaded: a page may set `window.ShopChat = window.ShopChat || []`
 * and `ShopChat.push(['open'])`, `ShopChat.push(['on', 'message', callback])`; the widget runs
 * the queued commands in order once it has mounted, then puts its API in the array's place (whose
 * `push` keeps working). A name already taken by anything but such an array is left alone.
 * Methods: `open()`, `close()`, `on(event, callback)` for `message` (`{ text }`: a reply, in plain
 * words), `sent` (`{ text }`: a message of the visitor's the service took), `open`, `close` and
 * `unread` (the count: called at once, then on each change), `off(event, callback)`, `state()`
 * (`{ open, unread, signedIn }`),
 * `prefill(text)`, `hide()` / `show()` (the launcher), `identify({ id, email, name, ts, hash })`,
 * `sound(on)`, `onUnread(callback)` (as `on('unread', callback)`), `setData({ plan: 'pro' })` (shown
 * to teammates with the conversation, never to the model; numbers and booleans become text;
 * `setData(null)` clears it), and
 * `reset()` (also `identify(null)`: the site's user signed out) which ends the conversation on this
 * device and forgets the data.
 */
import type { SignedInUser } from './signed-in-user.js';

export type WidgetEvent = 'message' | 'sent' | 'open' | 'close' | 'unread';

/** What `state()` tells the site. */
export interface WidgetState {
  open: boolean;
  unread: number;
  /** The page named a signed-in user (the script tag's, or `identify`'s). */
  signedIn: boolean;
}

export interface ScriptApiHooks {
  open(): void;
  close(): void;
  onUnread(callback: (count: number) => void): void;
  offUnread(callback: (count: number) => void): void;
  state(): WidgetState;
  sound(on: boolean): void;
  prefill(text: string): void;
  setHidden(hidden: boolean): void;
  identify(user: SignedInUser): void;
  /** Ends the conversation on this device and starts a fresh anonymous one. */
  reset(): void;
  /** The site's data for the conversation (checked by the service). */
  setData(data: Record<string, unknown>): void;
}

const API_NAME = /^[A-Za-z_$][\w$]{0,39}$/;
const EVENTS: readonly string[] = ['message', 'sent', 'open', 'close'];

type Callback = (detail: unknown) => void;

/** Defines `window[name]` (running what the page queued there) and returns how the widget tells its listeners of an event. */
export function exposeScriptApi(name: string | undefined, hooks: ScriptApiHooks): (event: WidgetEvent, detail?: unknown) => void {
  const listeners = new Map<string, Callback[]>();
  const emit = (event: WidgetEvent, detail?: unknown): void => {
    for (const listener of listeners.get(event) ?? []) {
      try {
        listener(detail);
      } catch {
        // A site's listener failing is its own business: the widget and the other listeners go on.
      }
    }
  };
  const queued: unknown = name && API_NAME.test(name) ? (window as unknown as Record<string, unknown>)[name] : null;
  if (!name || !(queued === undefined || Array.isArray(queued))) return emit;

  const api = {
    open: () => hooks.open(),
    close: () => hooks.close(),
    sound: (on: unknown) => hooks.sound(on === true),
    onUnread: (callback: unknown) => api.on('unread', callback),
    on(event: unknown, callback: unknown): void {
      if (typeof callback !== 'function') return;
      if (event === 'unread') hooks.onUnread(callback as (count: number) => void);
      else if (typeof event === 'string' && EVENTS.includes(event)) listeners.set(event, [...(listeners.get(event) ?? []), callback as Callback]);
    },
    off(event: unknown, callback: unknown): void {
      if (event === 'unread') hooks.offUnread(callback as (count: number) => void);
      else if (typeof event === 'string')
        listeners.set(
          event,
          (listeners.get(event) ?? []).filter((listener) => listener !== callback),
        );
    },
    state: (): WidgetState => ({ ...hooks.state() }),
    prefill: (text: unknown) => hooks.prefill(String(text ?? '')),
    hide: () => hooks.setHidden(true),
    show: () => hooks.setHidden(false),
    reset: () => hooks.reset(),
    setData(data: unknown): void {
      // An object (null clears); anything else is not data.
      if (typeof data != 'object' || Array.isArray(data)) return;
      hooks.setData(
        Object.fromEntries(
          Object.entries(data ?? {}).map(([key, value]) => [key, typeof value == 'number' || typeof value == 'boolean' ? String(value) : value]),
        ),
      );
    },
    identify(user: unknown): void {
      if (user === null) {
        hooks.reset();
        return;
      }
      const value = (user ?? {}) as Record<string, unknown>;
      const field = (key: string): string | undefined => (typeof value[key] === 'string' || typeof value[key] === 'number' ? String(value[key]) : undefined);
      const id = field('id');
      const hash = field('hash');
      if (!id || !hash) return;
      const [ts, email, nameField] = [field('ts'), field('email'), field('name')];
      hooks.identify({ id, hash, ...(ts ? { ts } : {}), ...(email ? { email } : {}), ...(nameField ? { name: nameField } : {}) });
    },
    /** A command, as queued before the script loaded: `['open']`, `['on', 'message', callback]`. */
    push(...commands: unknown[]): void {
      for (const command of commands) {
        if (!Array.isArray(command)) continue;
        const [method, ...args] = command as [unknown, ...unknown[]];
        const run =
          typeof method === 'string' && method !== 'push' && Object.prototype.hasOwnProperty.call(api, method)
            ? (api as Record<string, unknown>)[method]
            : undefined;
        if (typeof run === 'function') (run as (...values: unknown[]) => void)(...args);
      }
    },
  };
  Object.defineProperty(window, name, { value: Object.freeze(api), configurable: true });
  // Once the widget is mounted (this runs while it is being built).
  if (Array.isArray(queued)) queueMicrotask(() => api.push(...(queued as unknown[])));
  return emit;
}
