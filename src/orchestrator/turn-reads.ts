/**
 * A turn's first reads — who is talking (`channel.identify`) and the conversation's orchestrator
 * state (one MGET) — started by the worker ahead of the turn, while it opens the conversation and
 * asks the takeover hook (independent keys: one round trip's wait for all of them, not two). The
 * worker holds the conversation's lock from before they start, so nothing writes that state
 * between these reads and the turn. A batch that resets the conversation, or that a person holds,
 * leaves them unused. Each promise has a handler from the start: unused, a failure is harmless.
 */
import type { ChannelDefinition, InboundMessage, TurnInput } from '../contracts/index.js';
import type { LinkedCustomer } from '../contracts/tool.js';
import type { ConversationState, TurnStartState } from './state/conversation-state.js';
import type { TurnFeedback } from './turn-feedback.js';

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

/**
 * A turn's start, once per turn before anything is offered: who the service verified is talking,
 * read alongside the conversation's state (independent keys: one round trip's wait, not two), or
 * taken from `reads` started earlier still by the worker; and whether a comment on the service is
 * awaited (a failed read: answered as any turn). A first turn's state is cleared, not read: the
 * reset is sent ahead of everything the turn writes on the same keys (so Redis runs it first) and
 * returned as `resetting`, for the turn to await before it ends.
 */
export async function startTurn(
  dependencies: { state: ConversationState; feedback?: TurnFeedback | undefined; roleIds: readonly string[]; factRoleIds: readonly string[] },
  channel: ChannelDefinition,
  input: TurnInput,
  reads: TurnReads | undefined,
) {
  const { state, feedback, roleIds, factRoleIds } = dependencies;
  const resetting = input.firstTurn ? handled(state.reset(input.conversationId, roleIds)) : undefined;
  const [contact, start, awaited] = await Promise.all([
    reads ? reads.contact : channel.identify?.(input.inbound),
    input.firstTurn ? undefined : (reads?.state ?? state.readTurnStart(input.conversationId, factRoleIds)),
    feedback && !input.firstTurn && !input.tap
      ? feedback.awaiting(input.conversationId).then(
          (awaiting) => (awaiting ? feedback : undefined),
          () => undefined,
        )
      : undefined,
  ]);
  return { resetting, contact, start, feedback: awaited };
}
