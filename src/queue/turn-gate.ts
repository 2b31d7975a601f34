/**
 * The gate of a turn that may still be started over (see the turn worker's comment): a message
 * arriving before anything of the turn left aborts it with a `TurnRestart`; `commit` holds the
 * turn's first step that must not happen twice while the reply is held (the batch's quiet period
 * on a channel that does not stream, the customer typing), and from then on it is never started over.
 */
import { MAX_BATCH_MESSAGES, type InboxBatch } from './conversation-inbox.js';
import type { InboxNotice } from './inbox-notices.js';

/** The longest a customer's typing holds a reply whose turn already ran. */
const MAX_TYPING_HOLD_MS = 30_000;

/** Why a turn was started over: a message arrived before anything of it left. */
class TurnRestart extends Error {
  constructor() {
    super('a message arrived before the turn answered: started over with it');
    this.name = 'TurnRestart';
  }
}

/**
 * How a turn that may still be started over lets things out. Absent for a turn that can't be
 * (coalescing off, a frozen batch's retry): everything may leave at once.
 */
export interface TurnGate {
  /** Aborted (with a `TurnRestart`) when the turn is started over: abort what is cheap to redo (the model call) on it. */
  readonly restart: AbortSignal;
  /**
   * Awaited before the turn's first step that must not be done twice (a tool runs, text
   * streams, a reply is stored to be sent): waits while the reply is held (the batch's quiet
   * period on a channel that does not stream, the customer typing); from then on the turn is
   * never started over. Throws the `TurnRestart` if it was started over first.
   */
  commit(): Promise<void>;
}

/** The notices heard about a conversation since its head was last read: kept until a turn's gate takes them, then handed to it. */
export interface Heard {
  notices: InboxNotice[];
  listener?: (notice: InboxNotice) => void;
}

/**
 * The gate of a turn on a fresh batch. `heard` is what the conversation's notices said since the
 * batch was read; `restartable`: a message arriving before the turn commits starts it over (once
 * per burst: not the turn that follows a restart); `holdUntil`: when its reply may leave (ms).
 */
export function openTurnGate(batch: InboxBatch, heard: Heard, restartable: boolean, holdUntil: number): TurnGate {
  const controller = new AbortController();
  const canGrow = restartable && batch.behind === 0 && batch.entries.length < MAX_BATCH_MESSAGES && !batch.entries[0].message.teammate;
  let committed = false;
  let typingUntil = 0;
  let wake: (() => void) | undefined;
  const hear = (notice: InboxNotice) => {
    if (committed || controller.signal.aborted) return;
    if (notice.kind === 'grew') {
      if (canGrow && notice.length > batch.entries.length) controller.abort(new TurnRestart());
    } else {
      typingUntil = notice.standsMs > 0 ? Date.now() + notice.standsMs : 0;
    }
    wake?.();
  };
  for (const notice of heard.notices) hear(notice);
  heard.listener = hear;
  const typingLimit = Date.now() + MAX_TYPING_HOLD_MS;
  return {
    restart: controller.signal,
    async commit() {
      while (!committed) {
        if (controller.signal.aborted) throw controller.signal.reason;
        const now = Date.now();
        const until = Math.max(holdUntil, Math.min(typingUntil, typingLimit));
        if (until <= now) {
          committed = true;
          break;
        }
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, until - now);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
    },
  };
}
