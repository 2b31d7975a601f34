/**
 * A suspect turn in a child process of its own: the worker forks its own entry again (the same
 * program, arguments and Node flags, with `SUSPECT_CHILD_FLAG` last), hands the child the one
 * batch, and keeps holding the conversation's lock meanwhile. A batch that kills the process
 * running it then kills only that child: the worker, alive and still holding the lock, quarantines
 * it there and then and goes on serving every other conversation. A healthy suspect is answered in
 * the child, beside the worker's other turns.
 *
 * The child's fence is the worker's: the worker sends it, every `FENCE_EVERY_MS`, until when the
 * lock is surely its own (`HeldLock.heldUntil`), and the child sends nothing once that time has
 * passed, so a child that outlives its worker (or stops hearing from it) sends nothing more. It
 * exits as soon as its worker is gone. A child the worker stops (its lock lost) is no death.
 *
 * Only an entry that can run as such a child opts in (`isolateSuspectTurns`: `src/main.ts`, a
 * test's worker process); a worker in another process (a test's in-process worker) runs its
 * suspects alone in itself (`solo-turns.ts`), as does one whose child failed to start, for a minute.
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { FailureKind } from '../errors/index.js';
import type { InboundBatch } from './turn-worker-types.js';

/** The argument that makes an entry a suspect turn's child (`isSuspectChildProcess`). */
export const SUSPECT_CHILD_FLAG = '--suspect-turn-child';
/** How often the worker tells its child until when the conversation's lock is surely held. */
const FENCE_EVERY_MS = 100;
/** The most suspect children one worker process runs at once; a suspect beyond them comes back later. */
const MAX_CHILDREN = 4;
/** How long a child whose turn ended may take to stop before it is killed. */
const STOP_GRACE_MS = 30_000;
/** How long a process whose child failed to start runs its suspects alone in itself instead. */
const UNSTARTED_PAUSE_MS = 60_000;

/** What the worker tells its child. */
export type ToChild = { kind: 'run'; batch: InboundBatch; heldUntil: number } | { kind: 'fence'; heldUntil: number } | { kind: 'abort' };
/** What the child tells its worker: ready for its batch, then how the turn ended (a failure classified where it happened). */
export type FromChild =
  { kind: 'ready' } | { kind: 'answered' } | { kind: 'failed'; failure: FailureKind; modelOutage: boolean; name: string; message: string };

/**
 * How a suspect's turn in a child ended: `answered`; `failed` (as the child classified it, or a
 * child stopped before it said); `died` (the child crashed without saying, while running the
 * batch: the batch's death); `unstarted` (the
 * child ended before taking the batch: no evidence against it); `stopped` (the worker stopped it, or
 * is stopping itself).
 */
export type ChildOutcome =
  | { kind: 'answered' }
  | ({ kind: 'failed' } & Omit<Extract<FromChild, { kind: 'failed' }>, 'kind'>)
  | { kind: 'died'; code: number | null; signal: NodeJS.Signals | null }
  | { kind: 'unstarted'; code: number | null; signal: NodeJS.Signals | null }
  | { kind: 'stopped' };

let entry: { path: string; args: string[] } | undefined;

/** The process's entry can run as a suspect turn's child: from now on, its workers run suspect turns in children. */
export function isolateSuspectTurns(): void {
  const [, path, ...args] = process.argv;
  if (path !== undefined) entry = { path, args: args.filter((arg) => arg !== SUSPECT_CHILD_FLAG) };
}

/** This process is a suspect turn's child (forked by a worker, with the flag): it runs the one batch it is handed. */
export const isSuspectChildProcess = (): boolean => process.argv.includes(SUSPECT_CHILD_FLAG) && typeof process.send === 'function';

export interface SuspectChildren {
  /** Whether this process runs its suspect turns in children. */
  readonly enabled: boolean;
  /** Whether a child may start now (fewer than the process's most are running). */
  available(): boolean;
  /** Runs `batch` in a fresh child; `heldUntil` reads the lock's fence; `signal` stops it (`stopping`: the process is stopping). */
  run(batch: InboundBatch, heldUntil: () => number, signal: AbortSignal, stopping: AbortSignal): Promise<ChildOutcome>;
}

export function createSuspectChildren(): SuspectChildren {
  let running = 0;
  // A child that could not start (no fork, an entry that fails): suspects run alone in this process for a while.
  let pausedUntil = 0;
  return {
    get enabled() {
      return entry !== undefined && Date.now() >= pausedUntil;
    },
    available: () => running < MAX_CHILDREN,
    async run(batch, heldUntil, signal, stopping) {
      if (!entry) throw new Error('suspect turns are not isolated in this process');
      running += 1;
      try {
        const outcome = await runChild(entry, batch, heldUntil, signal, stopping);
        if (outcome.kind === 'unstarted') pausedUntil = Date.now() + UNSTARTED_PAUSE_MS;
        return outcome;
      } finally {
        running -= 1;
      }
    },
  };
}

function runChild(
  from: { path: string; args: string[] },
  batch: InboundBatch,
  heldUntil: () => number,
  signal: AbortSignal,
  stopping: AbortSignal,
): Promise<ChildOutcome> {
  const child: ChildProcess = fork(from.path, [...from.args, SUSPECT_CHILD_FLAG], {
    execArgv: process.execArgv,
    serialization: 'advanced',
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const tell = (message: ToChild) => {
    // A child already gone is found by its exit.
    if (child.connected) child.send(message, () => undefined);
  };
  return new Promise<ChildOutcome>((resolve) => {
    let started = false;
    let settled = false;
    const fence = setInterval(() => tell({ kind: 'fence', heldUntil: heldUntil() }), FENCE_EVERY_MS);
    const stop = () => {
      tell({ kind: 'abort' });
      child.kill('SIGKILL');
    };
    const finish = (outcome: ChildOutcome) => {
      if (settled) return;
      settled = true;
      clearInterval(fence);
      signal.removeEventListener('abort', stop);
      // Its turn is over: the child stops as any worker does (its entry's SIGTERM), killed if it lingers.
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS).unref();
      }
      resolve(outcome);
    };
    if (signal.aborted) stop();
    else signal.addEventListener('abort', stop, { once: true });
    child.on('message', (message: FromChild) => {
      if (message.kind === 'ready') {
        started = true;
        tell({ kind: 'run', batch, heldUntil: heldUntil() });
      } else if (message.kind === 'answered') finish({ kind: 'answered' });
      else finish({ ...message, kind: 'failed' });
    });
    child.on('error', () => {
      if (!started) finish({ kind: 'unstarted', code: null, signal: null });
    });
    child.on('exit', (code, exitSignal) => {
      if (signal.aborted || stopping.aborted) finish({ kind: 'stopped' });
      else if (!started) finish({ kind: 'unstarted', code, signal: exitSignal });
      // Stopped (a SIGTERM to the child alone) before it said how the turn ended: a failure, retried a few times, never a death.
      else if (code === 0 || exitSignal === 'SIGTERM')
        finish({ kind: 'failed', failure: 'unknown', modelOutage: false, name: 'SuspectChildStopped', message: 'the child stopped before its turn ended' });
      else finish({ kind: 'died', code, signal: exitSignal });
    });
  });
}
