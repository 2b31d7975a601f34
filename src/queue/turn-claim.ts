/**
 * Claiming a conversation: its lock and the head's first read go in one round trip (the read is
 * used only if the lock was acquired). From the claim on, what the conversation's notices say is
 * heard (for the gate of the turn that may be started over), and a lost lock aborts the turn
 * under way. A conversation whose lock is held is left to its holder (`busy`), which answers
 * the inbox before it lets go.
 */
import { holdConversationLock, lockRequest, type HeldLock } from './conversation-lock.js';
import type { InboxBatch } from './conversation-inbox.js';
import type { TurnAdmission } from './turn-admission.js';
import type { TurnContext } from './turn-context.js';
import type { Heard } from './turn-gate.js';

export interface ConversationClaim {
  conversationKey: string;
  /** Aborted when the lock is lost: the turn under way is cut short. */
  abort: AbortController;
  /**
   * What the conversation's notices say while this holds it: kept from each read of the head on
   * (a notice about a message that read found says no more than the read did), for its turn's gate.
   */
  heard: Heard;
  /** Stops listening to the conversation's notices. */
  unwatch: () => void;
  lock: HeldLock;
  /** The lock's token (a turn's running mark names it). */
  token: string;
  /** Throws unless this worker still surely holds the conversation: called right before anything leaves. */
  assertHeld: () => void;
  /** The head's batch as read with the lock (throws as `inbox.batch` would). */
  first: () => InboxBatch | undefined;
}

/** A claim while one drain answers the conversation's inbox (for job `jobId`), batch by batch. */
export interface DrainState extends ConversationClaim {
  jobId?: string;
  /** A holding job's: the head and failed attempt whose holding message is due. */
  holding?: { messageId: string; attempt: number };
  /** The next batch, read in the step that acknowledged the last one (or with the lock). */
  prefetched?: () => InboxBatch | undefined;
  /** The mark of a turn this drain marked running and has not ended: cleared on the way out unless the worker dies. */
  running?: string;
  /** What lets this drain's turns start (the suspect turn alone, others while no suspect runs here): released on the way out. */
  admission: TurnAdmission;
}

/** Takes the conversation's lock and reads its head in the same round trip; undefined when another holds it. */
export async function claimConversation(context: TurnContext, conversationKey: string): Promise<ConversationClaim | undefined> {
  const { inbox, notices, redis, logger, lockTtlMs } = context.options;
  const abort = new AbortController();
  const heard: Heard = { notices: [] };
  const watching = notices?.watch(conversationKey, (notice) => (heard.listener ? heard.listener(notice) : heard.notices.push(notice)));
  const unwatch = () => watching?.();
  const request = lockRequest(conversationKey, lockTtlMs);
  let first: Awaited<ReturnType<typeof inbox.lockAndBatch>>;
  try {
    first = await inbox.lockAndBatch(conversationKey, context.maxBatch, request);
  } catch (error) {
    unwatch();
    throw error;
  }
  if (!first.acquired) {
    unwatch();
    return undefined;
  }
  const lock = holdConversationLock(redis, request, () => {
    logger.warn('conversation-lock-lost', { conversationKey });
    abort.abort(new Error('conversation lock lost'));
  });
  const assertHeld = () => {
    if (!lock.held) throw new Error(`lost the lock of ${conversationKey}`);
  };
  return { conversationKey, abort, heard, unwatch, lock, token: request.token, assertHeld, first: first.batch };
}
