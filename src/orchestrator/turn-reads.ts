/**
 * A turn's first reads — who is talking (`channel.identify`) and the conversation's orchestrator
 * state (one MGET) — started by the worker ahead of the turn, while it opens the conversation and
 * asks the takeover hook (independent keys: one round trip's wait for all of them, not two). The
 * worker holds the conversation's lock from before they start, so nothing writes that state
 * between these reads and the turn. A batch that resets the conversation, or that a person holds,
 * leaves them unused. Each promise has a handler from the start: unused, a failure is harmless.
 */
import type { ChannelDefinition, InboundMessage } from '../contracts/index.js';
import type { LinkedCustomer } from '../contracts/tool.js';
import type { ConversationState, TurnStartState } from './state/conversation-state.js';

export interface TurnReads {
  contact: Promise<LinkedCustomer | undefined>;
  /** The state as `readTurnStart` reads it (a first turn ignores it: its state is reset). */
  state: Promise<TurnStartState>;
}

const handled = <T>(promise: Promise<T>): Promise<T> => {
  promise.catch(() => undefined);
  return promise;
};

/** Starts the reads of a turn on `inbound` (the batch's last message) in `conversationId`. */
export function startTurnReads(
  state: Pick<ConversationState, 'readTurnStart'>,
  factRoleIds: readonly string[],
  channel: ChannelDefinition,
  conversationId: string,
  inbound: InboundMessage,
): TurnReads {
  return {
    contact: handled(Promise.resolve().then(() => channel.identify?.(inbound))),
    state: handled(state.readTurnStart(conversationId, factRoleIds)),
  };
}
