/**
 * The context a tool call gets on a leg: who and where the customer is, the verified caller,
 * the routed role's facts and the session — built in one place for fresh and continuation legs
 * alike — and how a refused call is reported.
 */
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { ScopeDenial } from '../tools/scope.js';
import type { Caller, SessionFacts, ToolCallContext } from '../contracts/tool.js';
import type { ChannelDefinition, Facts, TurnInput } from '../contracts/index.js';

export function toolContextFor(
  channel: ChannelDefinition,
  input: TurnInput,
  leg: { runId: string; roleId: string; facts: Facts; session: SessionFacts; caller: Caller },
): ToolCallContext {
  return {
    conversationId: input.conversationId,
    runId: leg.runId,
    roleId: leg.roleId,
    channelId: channel.id,
    customer: input.inbound.from,
    caller: leg.caller,
    latestMessage: input.inbound.text,
    facts: leg.facts,
    session: leg.session,
    metadata: input.inbound.metadata,
    receivedAt: input.inbound.receivedAt,
    signal: input.signal,
  };
}

/**
 * Logs and counts a tool call refused for the caller's scope (`tool_scope_denied_total`). A call
 * that only needs an entity chosen first is ordinary sequencing: logged, not counted.
 */
export function scopeDenialReporter(metrics: Metrics, logger: Logger, leg: { roleId: string; channelId: string; caller: Caller }) {
  return (denial: { toolName: string; reason: ScopeDenial }) => {
    const fields = { toolName: denial.toolName.slice(0, 100), reason: denial.reason, roleId: leg.roleId, callerKind: leg.caller.kind };
    if (denial.reason === 'not-selected') {
      logger.info('tool-call-needs-entity', fields);
      return;
    }
    metrics.increment('tool_scope_denied_total', { reason: denial.reason, channel: leg.channelId });
    logger.warn('tool-scope-denied', fields);
  };
}
