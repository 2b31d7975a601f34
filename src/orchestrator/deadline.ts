/**
 * A model call's deadline: an abort signal that fires when the call runs past `ms` or when the
 * turn's own signal aborts, and whose timer is cleared the moment the call ends.
 *
 * Why not the AI SDK's `timeout` option: it arms `AbortSignal.timeout(ms)` and merges it with
 * `AbortSignal.any` on every call, and nothing clears that timer, so it and the merged signal
 * stay alive until it fires — 20 s after a judge call, 45 s after a reply that took a few
 * milliseconds. At hundreds of turns a second that was tens of thousands of live timers in the
 * worker, and the soak's memory growth.
 */

/** The reason a deadline aborts with: a `TimeoutError`, as `AbortSignal.timeout` gives. */
function deadlineReason(ms: number): DOMException {
  return new DOMException(`the model did not answer within ${ms} ms`, 'TimeoutError');
}

/** Runs `call` with a signal aborted after `ms` or when `parent` aborts; the timer ends with the call. */
export async function withDeadline<T>(ms: number, parent: AbortSignal, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const forward = () => controller.abort(parent.reason);
  if (parent.aborted) forward();
  else parent.addEventListener('abort', forward, { once: true });
  const timer = setTimeout(() => controller.abort(deadlineReason(ms)), ms);
  try {
    return await call(controller.signal);
  } finally {
    clearTimeout(timer);
    parent.removeEventListener('abort', forward);
  }
}
