/**
 * The turns one worker process runs, so a suspect turn (a batch a worker already died in) of a
 * worker that runs suspects in itself (no child for them, `suspect-child.ts`) runs alone in it: while one waits or runs, the process starts no other turn, and it starts only once
 * the turns already running have ended. A process that dies while running a suspect turn alone
 * therefore died of that batch (or of nothing a turn did): only such a death counts against it,
 * and it quarantines the batch. Process-local; the fleet-wide one-suspect-at-a-time rule is `suspect-turn.ts`.
 */

/** How often a waiting suspect looks whether the process's other turns have ended. */
const SOLO_POLL_MS = 50;

export interface SoloTurns {
  /** A turn is starting: false (start nothing) while a suspect turn waits or runs in this process. */
  enter(): boolean;
  /** A turn `enter` let in has ended (its running mark is cleared). */
  leave(): void;
  /**
   * Waits until the process runs no other turn, then holds it alone (new turns are refused
   * meanwhile); false when `signal` aborts first (the refusal is lifted).
   */
  enterAlone(signal: AbortSignal): Promise<boolean>;
  /** The suspect turn has ended (its running mark is cleared): other turns may start again. */
  leaveAlone(): void;
}

export function createSoloTurns(): SoloTurns {
  let running = 0;
  let alone = false;
  return {
    enter() {
      if (alone) return false;
      running += 1;
      return true;
    },
    leave() {
      running = Math.max(0, running - 1);
    },
    async enterAlone(signal) {
      // One suspect per fleet (`suspect-turn.ts`), so never two here; a second waits its turn too.
      while (alone) {
        if (signal.aborted) return false;
        await new Promise((resolve) => setTimeout(resolve, SOLO_POLL_MS));
      }
      alone = true;
      while (running > 0) {
        if (signal.aborted) {
          alone = false;
          return false;
        }
        await new Promise((resolve) => setTimeout(resolve, SOLO_POLL_MS));
      }
      return true;
    },
    leaveAlone() {
      alone = false;
    },
  };
}
