/** Blocks the event loop, as a long GC pause or a starved CPU would: no timer or I/O callback runs meanwhile. */
export function stallEventLoop(milliseconds: number): void {
  const until = Date.now() + milliseconds;
  while (Date.now() < until) {
    // busy
  }
}
