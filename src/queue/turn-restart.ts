/**
 * Coalescing a burst: when a fresh batch's turn starts, and starting it over when a message
 * arrives before anything of it left. A single message starts at once; a message arriving
 * before the turn commits (`TurnGate`) aborts it, and the batch is read again, grown; the turn
 * after a restart waits until the newest message is the channel's quiet period old (or the
 * batch is full) and is never started over again. A customer reported typing after the newest
 * message holds the turn a little longer. A channel that coalesces nothing answers one message
 * per turn.
 */
import { MAX_BATCH_MESSAGES, type InboxBatch } from './conversation-inbox.js';
import type { DrainState } from './turn-claim.js';
import type { TurnContext } from './turn-context.js';
import { openTurnGate, type TurnGate } from './turn-gate.js';

/** How often a turn waiting for a typing customer looks again (a report stands for the channel's quiet period). */
const TYPING_POLL_MS = 250;

const newestOf = (batch: Pick<InboxBatch, 'entries'>): number => Math.max(...batch.entries.map((entry) => entry.message.receivedAt));

/** When a batch that may still grow is due: its newest message quiet long enough, or the batch full. */
function quietUntil(context: TurnContext, batch: InboxBatch, now: number): number {
  if (batch.entries.length >= MAX_BATCH_MESSAGES || batch.entries[0].message.teammate) return now;
  // A clock ahead of this one never makes a batch wait longer than the quiet period.
  return Math.min(newestOf(batch), now) + context.coalesceFor(batch.entries[0].message.channel);
}

/** When a fresh batch's reply may leave: at once on a streaming channel, else once its newest message is quiet long enough. */
function holdUntil(context: TurnContext, { entries }: InboxBatch): number {
  const { channel } = entries[0].message;
  return context.options.streamingChannels?.has(channel) ? 0 : Math.min(newestOf({ entries }), Date.now()) + context.coalesceFor(channel);
}

/** The customer reported typing after the batch's newest message, and the report stands. */
const typingAfter = (batch: InboxBatch): boolean => batch.typingAt !== undefined && batch.typingAt > newestOf(batch);

/**
 * Whether the head's batch may start its turn now. `batch`: what the turn answers (a channel
 * that does not coalesce answers only the head); `coalescing`: the turn may be started over (a
 * fresh batch on a channel with a quiet period); `quietAt`: not yet, due then.
 */
export function whenTurnStarts(context: TurnContext, conversationKey: string, read: InboxBatch): { batch: InboxBatch; coalescing: boolean; quietAt?: number } {
  const head = read.entries[0].message;
  const coalescing = !read.frozen && context.coalesceFor(head.channel) > 0;
  // This channel answers one message per turn.
  const batch =
    !read.frozen && !coalescing && read.entries.length > 1
      ? { ...read, entries: [read.entries[0]] as const, behind: read.behind + read.entries.length - 1 }
      : read;
  if (coalescing && !head.teammate) {
    // A single message starts at once; the turn after a restart waits for the burst to end.
    const now = Date.now();
    const at = typingAfter(batch) ? now + TYPING_POLL_MS : batch.restarted ? quietUntil(context, batch, now) : now;
    if (at > now) {
      context.options.logger.debug('turn-coalescing', { conversationKey, messages: batch.entries.length, dueInMs: at - now, typing: typingAfter(batch) });
      return { batch, coalescing, quietAt: at };
    }
  }
  return { batch, coalescing };
}

/** The gate of a coalescing turn: started over by a message arriving before it commits, unless it follows a restart. */
export const openRestartGate = (context: TurnContext, drain: DrainState, batch: InboxBatch): TurnGate =>
  openTurnGate(batch, drain.heard, !batch.restarted, holdUntil(context, batch));

/** Nothing of the turn left: the batch is read again, grown, and answered by the next turn. */
export async function restartTurn(context: TurnContext, drain: DrainState, batch: InboxBatch): Promise<void> {
  const head = batch.entries[0].message;
  await context.options.inbox.restart(drain.conversationKey, head.messageId);
  drain.running = undefined;
  drain.admission.ended();
  context.options.metrics.increment('turn_restarts_total', { channel: head.channel });
  context.options.logger.info('turn-restarted', { conversationKey: drain.conversationKey, messageId: head.messageId, messages: batch.entries.length });
}
