/**
 * The send ledger's state machine on its own, with an in-memory store and a scripted
 * receiver: what reaches the receiver and what the ledger records, for a fresh send, a refusal,
 * a lost outcome, a claim reported lost, and an entry found `sending` after a crash. The same
 * machine serves reply parts and hand-off notices (the delivery and hand-off suites run it on
 * the real stores).
 */
import { describe, expect, test } from '@jest/globals';
import { sendOnce, type FailedSendAction, type LedgerState } from '../../src/ledger/send-ledger.js';

interface Entry {
  status: 'pending' | 'sending' | 'sent' | 'failed';
  receipt?: string;
}

function ledger(initial: Entry['status'], options: { claimReportedLost?: boolean; received?: string[]; refuse?: Error; action?: FailedSendAction } = {}) {
  const entry: Entry = { status: initial };
  const received = options.received ?? [];
  const writes: string[] = [];
  const run = (exclusive: boolean, lookup = true, claimed = false) =>
    sendOnce<Entry, string>({
      entry: { ...entry },
      id: 'entry-1',
      claimed,
      state: (stored): LedgerState => (stored.status === 'pending' || stored.status === 'sending' ? stored.status : 'settled'),
      exclusive,
      store: {
        claim: async () => {
          if (entry.status !== 'pending') return false;
          entry.status = 'sending';
          writes.push('claim');
          return !options.claimReportedLost;
        },
        readBack: async () => ({ ...entry }),
        reclaim: async () => {
          entry.status = 'sending';
          writes.push('reclaim');
        },
        markSent: async (receipt) => {
          Object.assign(entry, { status: 'sent', receipt });
          writes.push('sent');
        },
        release: async () => {
          entry.status = 'pending';
          writes.push('release');
        },
        markFailed: async () => {
          entry.status = 'failed';
          writes.push('failed');
        },
      },
      channel: {
        send: async () => {
          if (options.refuse) throw options.refuse;
          received.push('hello');
          return `SM${received.length}`;
        },
        ...(lookup ? { lookup: async () => (received.length > 0 ? `SM${received.length}` : undefined) } : {}),
        afterFailedSend: () => options.action ?? 'release',
      },
    });
  return { entry, received, writes, run };
}

describe('the send ledger', () => {
  test('a pending entry is claimed, sent once and marked sent', async () => {
    const { entry, received, writes, run } = ledger('pending');
    expect(await run(true)).toEqual({ outcome: 'sent', receipt: 'SM1' });
    expect(await run(true)).toEqual({ outcome: 'skipped' });
    expect(received).toEqual(['hello']);
    expect(entry).toEqual({ status: 'sent', receipt: 'SM1' });
    expect(writes).toEqual(['claim', 'sent']);
  });

  test.each([
    ['release', 'pending'],
    ['keep', 'sending'],
    ['fail', 'failed'],
  ] as const)('a refused send (%s) leaves the entry %s and throws the refusal', async (action, status) => {
    const refusal = new Error('refused');
    const { entry, received, run } = ledger('pending', { refuse: refusal, action });
    await expect(run(true)).rejects.toBe(refusal);
    expect(entry.status).toBe(status);
    expect(received).toEqual([]);
  });

  test('an entry found sending that reached the receiver is marked sent, not sent again', async () => {
    const { entry, received, writes, run } = ledger('sending', { received: ['hello'] });
    expect(await run(true)).toEqual({ outcome: 'found', receipt: 'SM1' });
    expect(received).toEqual(['hello']);
    expect(entry).toEqual({ status: 'sent', receipt: 'SM1' });
    expect(writes).toEqual(['sent']);
  });

  test('an entry found sending that never arrived (or with no lookup) is claimed again and resent', async () => {
    const looked = ledger('sending');
    expect(await looked.run(true)).toEqual({ outcome: 'resent', receipt: 'SM1' });
    expect(looked.writes).toEqual(['reclaim', 'sent']);
    const blind = ledger('sending', { received: ['hello'] });
    // Without a lookup the receiver dedupes (a webhook's idempotency key): the ledger resends.
    expect(await blind.run(false, false)).toEqual({ outcome: 'resent', receipt: 'SM2' });
  });

  test('an entry this attempt stored claimed is sent at once: no claim, no lookup; read back later, the same entry is looked up', async () => {
    const { entry, received, writes, run } = ledger('sending');
    expect(await run(true, true, true)).toEqual({ outcome: 'sent', receipt: 'SM1' });
    expect(writes).toEqual(['sent']);
    expect(received).toEqual(['hello']);
    expect(entry).toEqual({ status: 'sent', receipt: 'SM1' });
    // What another attempt reads back `sending` is never taken for its own claim: it is looked up (and found).
    const readBack = ledger('sending', { received: ['hello'] });
    expect(await readBack.run(true)).toEqual({ outcome: 'found', receipt: 'SM1' });
    expect(readBack.received).toEqual(['hello']);
  });

  test('a claim that applied but was reported lost: resolved at once under a lock, left to a retry without one', async () => {
    const locked = ledger('pending', { claimReportedLost: true });
    expect(await locked.run(true)).toEqual({ outcome: 'resent', receipt: 'SM1' });
    expect(locked.received).toEqual(['hello']);

    const unlocked = ledger('pending', { claimReportedLost: true });
    await expect(unlocked.run(false)).rejects.toThrow('the claim of entry-1 was reported lost; a retry resolves it');
    expect(unlocked.entry.status).toBe('sending');
    expect(unlocked.received).toEqual([]);
  });
});
