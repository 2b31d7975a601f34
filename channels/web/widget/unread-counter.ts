/**
 * The unread count: on the launcher, as "(2) " in front of the page's title while the panel is
 * closed, kept across reloads (session storage), and told to the script API's listeners.
 */
import type { Launcher } from './launcher.js';

export type UnreadCounter = ReturnType<typeof createUnreadCounter>;

export function createUnreadCounter(launcher: Launcher, storageKey: string) {
  let unread = 0;
  const listeners: ((count: number) => void)[] = [];
  // Our "(2) " in front of the page's title: taken off again without assuming the page kept its title.
  const untitled = (): string => document.title.replace(/^\(\d+\+?\) /, '');
  const set = (count: number): void => {
    const changed = count !== unread;
    unread = count;
    launcher.setUnread(count);
    // A counter in the tab's title, as messengers do, while the panel is closed.
    document.title = count > 0 ? `(${count > 9 ? '9+' : count}) ${untitled()}` : untitled();
    try {
      if (count > 0) sessionStorage.setItem(storageKey, String(count));
      else sessionStorage.removeItem(storageKey);
    } catch {
      // No storage: the count lasts as long as the page.
    }
    // Listeners hear each new count (opening the panel with nothing unread says nothing).
    if (changed) for (const listener of listeners) listener(count);
  };
  return {
    count: (): number => unread,
    set,
    restore(): void {
      try {
        const stored = Number(sessionStorage.getItem(storageKey));
        if (stored > 0) set(stored);
      } catch {
        // No storage.
      }
    },
    listen(callback: (count: number) => void): void {
      listeners.push(callback);
      callback(unread);
    },
    unlisten(callback: (count: number) => void): void {
      const index = listeners.indexOf(callback);
      if (index >= 0) listeners.splice(index, 1);
    },
    untitle(): void {
      document.title = untitled();
    },
  };
}
