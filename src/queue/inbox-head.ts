/**
 * Reading an inbox's head: the entries as stored, parsed back into inbound messages (an
 * unreadable head is a `CorruptInboxEntryError`), cut into the batch one turn answers (in
 * arrival order, up to MAX_BATCH_MESSAGES, a takeover entry always a batch of its own), with the
 * head's turn state (frozen size, retry, running mark, crashes, give-up decision, restart) read
 * in the same round trip.
 */
import { z } from 'zod';
import { AppError } from '../errors/index.js';
import { InboundMessageSchema, type InboundMessage } from '../contracts/index.js';

/** The most messages one turn answers (the judge sees the last six messages of a conversation). */
export const MAX_BATCH_MESSAGES = 5;

const HeadStateSchema = z.object({
  messageId: z.string().min(1),
  size: z.coerce.number().int().positive().optional(),
  /** The lock token of the turn running on the batch; left behind only by a worker that died in it. */
  running: z.string().min(1).optional(),
  /** How many workers died in a turn on this batch (`turn-deaths.ts`). */
  crashes: z.coerce.number().int().nonnegative().optional(),
  /** Why the batch was given up on, once it was (the decision stands for whoever holds it next). */
  given: z.string().min(1).optional(),
  /** A turn on this head was started over for a message that arrived during it: the next one waits for the quiet period. */
  restarted: z.string().min(1).optional(),
});
const RetryStateSchema = z.object({
  first: z.coerce.number().int().nonnegative(),
  attempts: z.coerce.number().int().nonnegative(),
  suspect: z.coerce.number().int().nonnegative(),
  next: z.coerce.number().int().nonnegative(),
});

/** How often and since when the inbox head has failed, and when it may be tried again. */
export interface RetryState {
  attempts: number;
  /** Attempts that failed for a reason not known to be an outage. */
  suspectAttempts: number;
  firstFailureAt: number;
  nextAttemptAt: number;
}

export interface InboxEntry {
  message: InboundMessage;
  /** The entry as stored; acknowledging compares it, so nothing needs to decode it in Redis. */
  raw: string;
}

/** The messages at the head of an inbox that one turn answers, oldest first (never empty). */
export interface InboxBatch {
  entries: readonly [InboxEntry, ...InboxEntry[]];
  /** A turn started on this batch before: it is exactly these messages, whatever arrived since. */
  frozen: boolean;
  /** Set when this batch failed before. */
  retry?: RetryState;
  /** The lock token of a turn marked running on this batch and never ended: its worker died in it (unless it is this holder's own). */
  running?: string;
  /** How many workers died in a turn on this batch. */
  crashes: number;
  /** Set once the batch was given up on, with the reason; whoever holds it next finishes giving up. */
  givenUp?: string;
  /** A turn on this head was started over once (`restart`): the next waits for the quiet period and is never started over again. */
  restarted: boolean;
  /** How many entries were read behind the batch (a batch with some can't grow by a new arrival). */
  behind: number;
  /** When the customer last reported typing, while that report stands (ms); read only for a batch that may coalesce (`maxMessages` > 1). */
  typingAt?: number;
  /** The read found no turn state at all (neither this head's nor one left by another): freezing it has nothing to check or clear. */
  stateless: boolean;
}

export interface RetryPolicy {
  firstDelayMs: number;
  maxDelayMs: number;
}

/** An inbox head that can't be read back (not JSON, or not an inbound message): set aside, never retried. */
export class CorruptInboxEntryError extends AppError {}

/** Text as it enters the inbox: well-formed UTF-16 (a lone surrogate becomes U+FFFD). */
export function sanitise(message: InboundMessage): InboundMessage {
  return {
    ...message,
    text: message.text.toWellFormed(),
    from: { ...message.from, ...(message.from.displayName ? { displayName: message.from.displayName.toWellFormed() } : {}) },
  };
}

/** An entry read back as an inbound message, or undefined when it is not JSON or not one. */
function readEntry(raw: string): InboundMessage | undefined {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return undefined;
  }
  const parsed = InboundMessageSchema.safeParse(json);
  return parsed.success ? parsed.data : undefined;
}

/** The head's batch from what LRANGE (up to MAX_BATCH_MESSAGES), HGETALL of its turn state and GET of the typing mark (if read) returned. */
export function headBatch(conversationKey: string, maxMessages: number, raws: readonly string[], stored: unknown, typing?: unknown): InboxBatch | undefined {
  const entries: InboxEntry[] = [];
  for (const raw of raws) {
    const message = readEntry(raw);
    if (message) entries.push({ message, raw });
    else if (entries.length === 0) throw new CorruptInboxEntryError(`inbox head of ${conversationKey} is not an inbound message`);
    else break;
  }
  // A takeover entry (a teammate's message or action) is a batch of its own: customer
  // messages are never coalesced with it, nor it with them.
  const takeoverAt = entries.findIndex((entry) => entry.message.teammate !== undefined);
  if (takeoverAt >= 0) entries.splice(Math.max(1, takeoverAt));
  const [head, ...rest] = entries;
  if (!head) return undefined;
  const state = HeadStateSchema.safeParse(stored);
  const ours = state.success && state.data.messageId === head.message.messageId;
  const retried = ours ? RetryStateSchema.safeParse(stored) : undefined;
  const retry = retried?.success
    ? { attempts: retried.data.attempts, suspectAttempts: retried.data.suspect, firstFailureAt: retried.data.first, nextAttemptAt: retried.data.next }
    : undefined;
  // A head that failed before its batch was frozen (an older release) is a batch of one.
  const frozenSize = ours ? (state.data.size ?? (retry ? 1 : undefined)) : undefined;
  const size = Math.max(1, Math.min(frozenSize ?? maxMessages, entries.length));
  const running = ours ? state.data.running : undefined;
  const givenUp = ours ? state.data.given : undefined;
  const typingAt = typeof typing === 'string' ? Number(typing) : NaN;
  return {
    entries: [head, ...rest.slice(0, size - 1)],
    frozen: frozenSize !== undefined,
    // Only a read that returned the state (an empty hash) knows there is none; a failed one does not.
    stateless: typeof stored === 'object' && stored !== null && Object.keys(stored).length === 0,
    crashes: ours ? (state.data.crashes ?? 0) : 0,
    restarted: ours && state.data.restarted !== undefined,
    behind: raws.length - size,
    ...(Number.isFinite(typingAt) ? { typingAt } : {}),
    ...(retry ? { retry } : {}),
    ...(running ? { running } : {}),
    ...(givenUp ? { givenUp } : {}),
  };
}
