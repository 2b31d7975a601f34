/**
 * Whether one drain may start a turn now: a batch a worker already died in (unless it runs in a
 * child, `turn-isolated.ts`: then it is admitted as any turn) runs again only as the
 * fleet's one suspect turn (`suspect-turn.ts`, its lease renewed while it is held) and alone in
 * its worker process (`solo-turns.ts`); any other turn waits while a suspect turn waits or runs in
 * the process. A turn admitted alone writes a running mark that says so (`ALONE_MARK`): only a
 * death in such a turn counts against its batch (and quarantines it).
 */
import type { Logger } from '../logger.js';
import type { SoloTurns } from './solo-turns.js';
import type { SuspectTurn } from './suspect-turn.js';
import { ALONE_MARK } from './turn-deaths.js';

export interface TurnAdmission {
  /**
   * Admits the next turn of the drain whose running mark is `mark` (`suspect`: a worker died in
   * its batch): the mark to write, or undefined when it must come back later. A suspect waits
   * (holding the suspect slot) until its process runs no other turn; `signal` ends the wait.
   */
  admit(suspect: boolean, mark: string, signal: AbortSignal): Promise<string | undefined>;
  /** The admitted turn ended (its running mark is cleared); a suspect keeps its slot until `release`. */
  ended(): void;
  /** Lets the suspect slot go (its batch answered, or the drain ends) and lets the process take other turns again. */
  release(): Promise<void>;
}

export function createTurnAdmission(suspects: SuspectTurn, solo: SoloTurns, renewEveryMs: number, logger: Logger, conversationKey: string): TurnAdmission {
  let shared = false;
  let slot: string | undefined;
  let alone = false;
  let renewal: NodeJS.Timeout | undefined;
  return {
    async admit(suspect, mark, signal) {
      if (!suspect) {
        if (!shared && !solo.enter()) return undefined;
        shared = true;
        return mark;
      }
      if (slot === undefined) {
        if (!(await suspects.claim(mark))) return undefined;
        slot = mark;
        const held = slot;
        renewal = setInterval(() => {
          suspects.renew(held).then(
            (renewed) => {
              if (!renewed) logger.warn('suspect-turn-lost', { conversationKey });
            },
            (error: unknown) => logger.warn('suspect-turn-unrenewed', { conversationKey, error }),
          );
        }, renewEveryMs);
        renewal.unref();
      }
      if (!alone) alone = await solo.enterAlone(signal);
      return alone ? mark + ALONE_MARK : undefined;
    },
    ended() {
      if (shared) solo.leave();
      shared = false;
    },
    async release() {
      clearInterval(renewal);
      renewal = undefined;
      if (alone) solo.leaveAlone();
      alone = false;
      const held = slot;
      slot = undefined;
      if (held !== undefined) await suspects.release(held).catch((error: unknown) => logger.warn('suspect-turn-unreleased', { conversationKey, error }));
    },
  };
}
