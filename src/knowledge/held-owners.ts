/**
 * What one process's index holds, owner by owner, and its version: the owner count and an
 * order-free digest of each owner's id and text hash. The store's version is the same digest over
 * MongoDB's owner records, so equal versions mean the index holds what the store does.
 */
import { createHash } from 'node:crypto';

/** The version of a set of (owner, hash) pairs: `<owners>-<digest>`, the same whatever their order. */
export function ownersVersion(pairs: Iterable<readonly [string, string]>): string {
  let digest = 0n;
  let count = 0;
  for (const [owner, hash] of pairs) {
    digest ^= createHash('sha256').update(`${owner}\n${hash}`).digest().readBigUInt64BE(0);
    count += 1;
  }
  return `${count}-${digest.toString(16).padStart(16, '0')}`;
}

/** What this process's index holds, owner by owner (the library tells it of every change it makes or applies). */
export class HeldOwners {
  private readonly hashes = new Map<string, string>();

  indexed(owner: string, hash: string | undefined): void {
    if (hash === undefined) this.hashes.delete(owner);
    else this.hashes.set(owner, hash);
  }

  reset(entries: Iterable<readonly [string, string]>): void {
    this.hashes.clear();
    for (const [owner, hash] of entries) this.hashes.set(owner, hash);
  }

  entries(): [string, string][] {
    return [...this.hashes];
  }

  version(): string {
    return ownersVersion(this.hashes);
  }
}
