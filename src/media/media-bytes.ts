/** Where a turn's media bytes live: a growing buffer, a byte budget shared by turns, a guarded download. */
import { MediaRejectedError } from './content-check.js';
import { isTimeout } from './media-fetch.js';

/**
 * A buffer the bytes are copied into as they stream: allocated once when the length is
 * announced, grown by doubling otherwise, so a file is held whole only once.
 */
export class ByteSink {
  private buffer: Buffer;
  private length = 0;
  constructor(
    expected: number | undefined,
    private readonly maxBytes: number,
  ) {
    this.buffer = Buffer.allocUnsafe(Math.min(expected ?? 64 * 1024, maxBytes));
  }
  push(chunk: Buffer): void {
    if (this.length + chunk.length > this.buffer.length) {
      const grown = Buffer.allocUnsafe(Math.min(this.maxBytes, Math.max(this.length + chunk.length, this.buffer.length * 2)));
      this.buffer.copy(grown, 0, 0, this.length);
      this.buffer = grown;
    }
    chunk.copy(this.buffer, this.length);
    this.length += chunk.length;
  }
  bytes(): Uint8Array {
    return this.buffer.subarray(0, this.length);
  }
}

/** The body of a download, with its errors (a network failure, the deadline) turned into media failures. */
export async function* guarded(body: AsyncIterable<Uint8Array>, signal: AbortSignal): AsyncGenerator<Uint8Array> {
  try {
    for await (const chunk of body) yield chunk;
  } catch (error) {
    if (error instanceof MediaRejectedError) throw error;
    if (isTimeout(error, signal)) throw new MediaRejectedError('download-timeout', 'media download timed out', { cause: error });
    throw new MediaRejectedError('download-failed', 'media download broke off', { cause: error });
  }
}

/**
 * A byte budget shared by the turns of one worker process, handed out first come, first served:
 * a turn waits (holding nothing) until its reservation fits, so the media all turns hold for the
 * model at once stays within it.
 */
export class ByteBudget {
  private available: number;
  private readonly waiting: { bytes: number; grant: () => void }[] = [];
  constructor(readonly total: number) {
    this.available = total;
  }
  async acquire(bytes: number, signal: AbortSignal): Promise<void> {
    if (this.waiting.length === 0 && bytes <= this.available) {
      this.available -= bytes;
      return;
    }
    signal.throwIfAborted();
    await new Promise<void>((resolve, reject) => {
      const entry = { bytes, grant: () => (signal.removeEventListener('abort', abort), resolve()) };
      const abort = () => {
        const index = this.waiting.indexOf(entry);
        if (index >= 0) this.waiting.splice(index, 1);
        reject(signal.reason instanceof Error ? signal.reason : new Error('turn aborted'));
        this.drain();
      };
      signal.addEventListener('abort', abort, { once: true });
      this.waiting.push(entry);
    });
  }
  /** Takes `bytes` now if they are free and nobody waits; never waits (a turn holding bytes must not). */
  tryAcquire(bytes: number): boolean {
    if (this.waiting.length > 0 || bytes > this.available) return false;
    this.available -= bytes;
    return true;
  }
  release(bytes: number): void {
    this.available += bytes;
    this.drain();
  }
  private drain(): void {
    for (let next = this.waiting[0]; next && next.bytes <= this.available; next = this.waiting[0]) {
      this.waiting.shift();
      this.available -= next.bytes;
      next.grant();
    }
  }
}
