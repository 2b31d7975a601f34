/**
 * The child's side of a suspect turn (`suspect-child.ts`): in a process forked with
 * `SUSPECT_CHILD_FLAG`, the turn worker takes no job; once warmed up (its knowledge index built,
 * or `SUSPECT_WARM_UP_MS` passed) it tells its parent it is ready, runs the one batch it is handed through the same handler as any turn, under the fence its parent keeps
 * sending (nothing leaves once the parent's hold on the lock may have ended), and says how the turn
 * ended: answered, or failed (classified here, where the error is). A parent that goes away takes
 * the child with it.
 */
import { classifyFailure, errorText, ModelCallError } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { FromChild, ToChild } from './suspect-child.js';
import type { InboundHandler } from './turn-worker-types.js';

/** Whether this process already serves its one turn (an entry that starts two workers answers it once). */
let serving = false;

/** The longest the child waits for its warm-up before it says it is ready (a store that is down never holds a suspect). */
const SUSPECT_WARM_UP_MS = 10_000;

/**
 * `warmUp`: what the child waits for (at most `SUSPECT_WARM_UP_MS`, a failure ignored) before it
 * tells its parent it is ready — the knowledge index, so a suspect is answered as any turn is.
 */
export function serveSuspectTurn(handle: InboundHandler, logger: Logger, warmUp?: () => Promise<void>): void {
  if (serving) return;
  serving = true;
  const abort = new AbortController();
  let heldUntil = 0;
  let ran = false;
  const tell = (message: FromChild) => process.send?.(message, undefined, {}, () => undefined);
  const assertHeld = () => {
    if (Date.now() >= heldUntil) throw new Error('the worker may no longer hold the conversation');
  };
  const run = async (batch: Extract<ToChild, { kind: 'run' }>['batch']) => {
    try {
      await handle(batch, abort.signal, assertHeld);
      tell({ kind: 'answered' });
    } catch (error) {
      const name = error instanceof Error ? error.name : 'Error';
      const modelOutage = error instanceof ModelCallError && error.retryable;
      tell({ kind: 'failed', failure: classifyFailure(error), modelOutage, name, message: errorText(error) });
    }
  };
  process.on('message', (message: ToChild) => {
    if (message.kind === 'abort') abort.abort(new Error('the worker stopped the suspect turn'));
    else {
      heldUntil = message.heldUntil;
      if (message.kind === 'run' && !ran) {
        ran = true;
        void run(message.batch);
      }
    }
  });
  // The parent is gone (or let go of the channel): nothing of this turn may leave any more.
  process.on('disconnect', () => {
    abort.abort(new Error('the worker is gone'));
    logger.warn('suspect-child-orphaned');
    process.exit(1);
  });
  void warmedUp(warmUp, logger).then(() => tell({ kind: 'ready' }));
}

/** Resolves once `warmUp` has, failed, or taken `SUSPECT_WARM_UP_MS` (the turn runs then, as a fresh worker's would). */
async function warmedUp(warmUp: (() => Promise<void>) | undefined, logger: Logger): Promise<void> {
  if (!warmUp) return;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), SUSPECT_WARM_UP_MS)));
  try {
    const outcome = await Promise.race([warmUp().then(() => 'warm' as const), timedOut]);
    if (outcome === 'timeout') logger.warn('suspect-child-warm-up-timeout', { afterMs: SUSPECT_WARM_UP_MS });
  } catch (error) {
    logger.warn('suspect-child-warm-up-failed', { error });
  } finally {
    clearTimeout(timer);
  }
}
