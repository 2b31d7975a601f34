/**
 * What an answered turn tells the satisfaction question (`csat.ts`), at a cost that doesn't grow
 * with messages: the role that answered is noted in the conversation's hash only when it changed
 * from what the customer's batch found there, and the conversation's quiet check is queued (one
 * ZADD) unless this process queued it within CSAT_AFTER_MINUTES — that check has not run yet, and
 * when it runs it finds the history written since (this reply) and is queued again for then
 * (`requeue`). Neither while a check could only fall in the cooldown of the question the batch
 * found asked.
 */
import { LRUCache } from 'lru-cache';
import type { TurnResult } from '../contracts/index.js';
import type { Logger } from '../logger.js';
import type { CsatState, InboundNote } from './csat-state.js';

/** Conversations whose customer's last batch here a process remembers (the oldest forgotten first). */
const NOTED_MEMORY = 10_000;
/** Conversations whose quiet check a process remembers queuing (the oldest forgotten first: queued again). */
const QUEUED_MEMORY = 50_000;

/** What a conversation's customer's last batch here found: when they were last asked, the role noted last. */
interface BatchNote {
  askedAt?: number;
  role?: string;
}

export interface CsatRepliesOptions {
  afterMs: number;
  cooldownMs: number;
  state: Pick<CsatState, 'noteRole'>;
  /** Queues the quiet check of a conversation for `delayMs` from now (`at`: what it follows). */
  scheduleQuiet(conversationKey: string, at: number, delayMs: number): Promise<void>;
  logger: Logger;
  now: () => number;
}

export function createCsatReplies(options: CsatRepliesOptions) {
  const { afterMs, cooldownMs, now } = options;
  const batchNotes = new LRUCache<string, BatchNote>({ max: NOTED_MEMORY });
  const queuedAt = new LRUCache<string, number>({ max: QUEUED_MEMORY });
  /** Whether a quiet check at `at` could only fall in the cooldown of the question asked at `askedAt`. */
  const inCooldown = (at: number, askedAt: number | undefined) => askedAt !== undefined && at + afterMs < askedAt + cooldownMs;

  return {
    /** What the customer's batch found (undefined: its note failed, nothing is known). */
    found(conversationKey: string, note: InboundNote | undefined): void {
      if (!note) batchNotes.delete(conversationKey);
      else batchNotes.set(conversationKey, { ...(note.askedAt !== undefined ? { askedAt: note.askedAt } : {}), ...(note.role ? { role: note.role } : {}) });
    },

    /** The quiet check again, for what happened at `at` — unless it could only fall in the cooldown. */
    async requeue(conversationKey: string, at: number, askedAt: number | undefined): Promise<void> {
      if (!inCooldown(at, askedAt)) await options.scheduleQuiet(conversationKey, at, afterMs);
    },

    /**
     * After each answered turn, inside it (before its batch is acknowledged: a write here never
     * follows an erasure). A failure is logged, never the turn's.
     */
    async noteTurn(result: TurnResult): Promise<void> {
      const conversationKey = result.postTurn?.conversationId;
      if (result.failed || !conversationKey) return;
      const at = now();
      const found = batchNotes.get(conversationKey);
      if (inCooldown(at, found?.askedAt)) return;
      const notingRole = found?.role === result.roleId ? undefined : options.state.noteRole(conversationKey, result.roleId);
      const queued = queuedAt.get(conversationKey);
      const queuing = queued !== undefined && at - queued < afterMs ? undefined : options.scheduleQuiet(conversationKey, at, afterMs);
      try {
        await Promise.all([notingRole, queuing]);
        batchNotes.set(conversationKey, { ...found, role: result.roleId });
        if (queuing) queuedAt.set(conversationKey, at);
      } catch (error) {
        options.logger.warn('csat-schedule-failed', { conversationKey, error });
      }
    },
  };
}
