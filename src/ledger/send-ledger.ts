/**
 * The send ledger: how anything the service sends on someone's behalf (a reply part, a
 * hand-off notice, next a teammate's message) goes out at most once although workers crash,
 * time out and retry. One entry moves `pending → sending → sent`:
 *   - claim it (`pending → sending`, compare-and-set) before the send, mark it sent after;
 *   - a send refused before anything left is released back to `pending` for a retry;
 *   - a send whose outcome was lost stays `sending`: whoever finds it so later looks it up at
 *     the receiver and marks it sent if it arrived, or claims it again and resends (where there
 *     is no lookup, the receiver dedupes by an idempotency key) — it is never sent blind.
 * The state machine lives here once; each user supplies its store (bound to one entry) and
 * its channel (send, lookup, what a failed send leaves), and keeps its own logs and metrics.
 */

/** Where an entry stands, as far as the ledger cares. */
export type LedgerState = 'pending' | 'sending' | 'settled';

/** One entry's side of the store; every write is by the entry's key. */
export interface LedgerStore<Entry, Receipt> {
  /** `pending → sending`; false when the compare-and-set did not apply (or was reported lost). */
  claim(): Promise<boolean>;
  /** The entry as stored now (after a claim reported lost). */
  readBack(): Promise<Entry | undefined>;
  /** Claims again an entry found `sending` whose send was not found at the receiver. */
  reclaim(): Promise<void>;
  markSent(receipt: Receipt): Promise<void>;
  /** `sending → pending`: the send was refused and nothing left. */
  release(error: unknown): Promise<void>;
  /** The send was refused for good. */
  markFailed(error: unknown): Promise<void>;
}

/** What a failed send leaves: released for a retry, kept `sending` (outcome unknown), or failed. */
export type FailedSendAction = 'release' | 'keep' | 'fail';

export interface LedgerChannel<Entry, Receipt> {
  send(): Promise<Receipt>;
  /** Finds a send of `entry` whose outcome was lost: its receipt, or undefined to resend. */
  lookup?(entry: Entry): Promise<Receipt | undefined>;
  afterFailedSend(error: unknown): FailedSendAction;
}

export interface LedgerOptions<Entry, Receipt> {
  entry: Entry;
  id: string;
  state(entry: Entry): LedgerState;
  store: LedgerStore<Entry, Receipt>;
  channel: LedgerChannel<Entry, Receipt>;
  /**
   * The caller holds a lock no other sender of this entry can hold (the conversation's): an
   * entry found `sending` after a lost claim is its own claim, resolved now. Without one it may
   * be another worker's send in flight: the attempt fails, and a retry resolves it.
   */
  exclusive: boolean;
  /** Told how an entry found `sending` was resolved (before a resend; with the receipt found). */
  onResolved?(outcome: 'found' | 'resent', found?: Receipt): void;
  /**
   * This attempt claimed the entry itself in the write that stored it (`pending → sending` with
   * nothing between): it is sent at once, with no claim of its own. Never for an entry read back.
   */
  claimed?: boolean;
}

export type LedgerResult<Receipt> =
  | { outcome: 'sent' | 'resent' | 'found'; receipt: Receipt }
  /** Settled already, or (without `exclusive`) claimed by another attempt. */
  | { outcome: 'skipped' };

/** Sends one entry at most once; throws what the send (or the store) threw. */
export async function sendOnce<Entry, Receipt>(options: LedgerOptions<Entry, Receipt>): Promise<LedgerResult<Receipt>> {
  const { store, channel } = options;
  let entry = options.entry;

  const sendClaimed = async (): Promise<Receipt> => {
    let receipt: Receipt;
    try {
      receipt = await channel.send();
    } catch (error) {
      const action = channel.afterFailedSend(error);
      if (action === 'release') await store.release(error);
      else if (action === 'fail') await store.markFailed(error);
      throw error;
    }
    await store.markSent(receipt);
    return receipt;
  };

  if (options.claimed) return { outcome: 'sent', receipt: await sendClaimed() };
  if (options.state(entry) === 'pending') {
    if (await store.claim()) return { outcome: 'sent', receipt: await sendClaimed() };
    // A claim that applied may be reported lost (the driver retried it after a dropped connection).
    entry = (await store.readBack()) ?? entry;
    const state = options.state(entry);
    if (options.exclusive && state === 'pending') throw new Error(`the claim of ${options.id} did not apply`);
    if (!options.exclusive && state === 'sending') throw new Error(`the claim of ${options.id} was reported lost; a retry resolves it`);
  }
  if (options.state(entry) !== 'sending') return { outcome: 'skipped' };

  // Found `sending`: an earlier attempt died (or lost the answer) mid-send. It stays `sending`
  // while it is looked up, so a failure here leaves it for the next attempt to look up again.
  const found = channel.lookup ? await channel.lookup(entry) : undefined;
  if (found !== undefined) {
    await store.markSent(found);
    options.onResolved?.('found', found);
    return { outcome: 'found', receipt: found };
  }
  await store.reclaim();
  options.onResolved?.('resent');
  return { outcome: 'resent', receipt: await sendClaimed() };
}
