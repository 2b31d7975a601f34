/**
 * The context a tool call gets on a leg: who and where the customer is, the routed role's
 * facts and the session — built in one place for fresh and continuation legs alike.
 */
import type { SessionFacts, ToolCallContext } from '../tools/tool.js';
import type { ChannelDefinition, Facts, TurnInput } from './contracts.js';

export function toolContextFor(
  channel: ChannelDefinition,
  input: TurnInput,
  leg: { runId: string; roleId: string; facts: Facts; session: SessionFacts },
): ToolCallContext {
  return {
    conversationId: input.conversationId,
    runId: leg.runId,
    roleId: leg.roleId,
    channelId: channel.id,
    customer: input.inbound.from,
    latestMessage: input.inbound.text,
    facts: leg.facts,
    session: leg.session,
    metadata: input.inbound.metadata,
    signal: input.signal,
  };
}
