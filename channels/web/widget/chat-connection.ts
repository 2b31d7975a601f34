/**
 * Whether the widget says the service is unreachable: the event stream is down, or a message is
 * waiting for the service; the browser being offline has its own banner instead.
 */
import type { Panel } from './panel.js';

export interface ConnectionState {
  setStreamDown(down: boolean): void;
  setSendingBlocked(blocked: boolean): void;
  /** Follows the browser going offline and online (`onOnline`: resume what waits). */
  watchOnline(onOnline: () => void): void;
}

export function createConnectionState(panel: Pick<Panel, 'setReconnecting' | 'setOffline'>): ConnectionState {
  // Why the service counts as unreachable: the event stream is down, or the outbox is waiting.
  let streamDown = false;
  let sendingBlocked = false;
  const update = (): void => {
    // Offline has its own banner; "Reconnecting…" is for a service that does not answer.
    panel.setReconnecting(navigator.onLine && (streamDown || sendingBlocked));
  };
  return {
    setStreamDown(down) {
      streamDown = down;
      update();
    },
    setSendingBlocked(blocked) {
      sendingBlocked = blocked;
      update();
    },
    watchOnline(onOnline) {
      const updateOnline = (): void => {
        panel.setOffline(!navigator.onLine);
        update();
        if (navigator.onLine) onOnline();
      };
      updateOnline();
      window.addEventListener('offline', updateOnline);
      window.addEventListener('online', updateOnline);
    },
  };
}
