/**
 * The orchestrator's entry point. It only wires the steps of a leg — grounding, judge and
 * state (prepare-turn), brief and prompt, tool offer, model, post-turn — each in its own file,
 * and never branches on which role or channel is running. A customer's answer to a pending
 * question is a continuation leg: it reuses the stored decision, or is refused if it expired.
 * Who is talking is asked of the channel once per turn (`identify`); the leg offers only the
 * reads that caller may use and binds every call to them.
 *
 * The steps of a turn: `continuation-step` (a pending question the batch answers, or a tap with
 * nothing pending), `prepare-turn` (state and judge), `answer-leg` (grounding, prompt, the reply
 * model, what its call left to keep), `finish-turn` (metering and post-turn once the reply is out).
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { ProviderBreakers } from '../model/provider-breaker.js';
import type { ModelProvider } from '../model/provider.js';
import { callerFor } from '../tools/caller.js';
import { callerMayUse } from '../tools/scope.js';
import type { AssistantTool, Caller, ToolCallContext } from '../contracts/tool.js';
import { createLegAnswer } from './answer-leg.js';
import type { ModelLimits } from './call-model.js';
import { createCircuitBreaker } from './circuit-breaker.js';
import { continueBatch } from './continuation-step.js';
import type { ChannelDefinition, InboundMessage, RoleDefinition, TurnInput, TurnResult } from '../contracts/index.js';
import { checkRosterLimits } from './define-role.js';
import { finishTurn, recordUsage } from './finish-turn.js';
import { defaultRole, type JudgeDependencies } from './judge.js';
import { createTurnMeter, type TurnMeter, type UsageRecorder } from './metering.js';
import { createModelOutages } from './model-outages.js';
import { prepareFreshLeg, type TurnKnowledge } from './prepare-turn.js';
import type { TurnGuidance } from './turn-guidance.js';
import { startTurn, startTurnReads, type TurnReads } from './turn-reads.js';
import { answerFeedback, type TurnFeedback } from './turn-feedback.js';
import type { UnlistedResume } from './resume-continuation.js';
import type { ConversationState } from './state/conversation-state.js';
import type { DecisionStore, StoredDecision } from './state/decision-store.js';
import type { FactStore } from './state/fact-store.js';

export interface OrchestratorOptions {
  roles: readonly RoleDefinition[];
  models: ModelProvider;
  /** The per-provider circuit breakers, shared by every worker (absent: none). */
  breakers?: ProviderBreakers;
  limits: ModelLimits;
  logger: Logger;
  metrics: Metrics;
  facts: FactStore;
  state: ConversationState;
  decisions: DecisionStore;
  /** The MCP reads this deployment can offer (empty when no MCP server is configured). */
  mcpTools?: () => readonly AssistantTool[];
  judgeBreaker?: { threshold: number; cooldownMs: number; now?: () => number };
  /** Stores a finished turn's model usage (per day, role and channel); failures are logged. */
  usage?: UsageRecorder;
  /** Resumes a pending question whose tool is not offered right now (a confirmation while its server is unreachable). */
  resumeUnlisted?: UnlistedResume;
  /** The service's words for a tap that comes when no question is pending (undefined: the generic refusal). */
  staleTap?: (choice: string, context: ToolCallContext) => Promise<string | undefined>;
  /** The business's published knowledge (src/knowledge/): cited passages in the brief of a turn that needs them. */
  knowledge?: TurnKnowledge;
  /** A comment the customer may be writing on the service they just rated: the judge's call says whether it is one. */
  feedback?: TurnFeedback;
  /** The business's guidance (src/guidance/): quoted in the routed role's prompt; the judge says which escalation entries apply. */
  guidance?: TurnGuidance;
}

export interface Orchestrator {
  /** Runs a turn; `reads`: its first reads, started ahead (`startReads`) while nothing else could change what they read. */
  runTurn(channel: ChannelDefinition, input: TurnInput, reads?: TurnReads): Promise<TurnResult>;
  /** Starts a turn's first reads (who is talking, the conversation's state) ahead of `runTurn`, under the conversation's lock. */
  startReads(channel: ChannelDefinition, conversationId: string, inbound: InboundMessage): TurnReads;
  /** Post-turn work for a leg whose reply was (or failed to be) delivered. Never throws. */
  finishTurn(channel: ChannelDefinition, result: Pick<TurnResult, 'roleId' | 'usage' | 'postTurn'>, delivered: boolean): Promise<void>;
  /** Clears a conversation's orchestrator state in one command (the customer's reset). */
  resetConversation(conversationId: string): Promise<void>;
  /** The decision a leg stored, while it has not expired (for the CLI's `/decision`). */
  decision(conversationId: string, runId: string): Promise<StoredDecision | undefined>;
  /** The role the conversation is routed to, or the roster's default before its first turn. */
  activeRole(conversationId: string): Promise<string>;
}

export function createOrchestrator(options: OrchestratorOptions): Orchestrator {
  const { roles, metrics } = options;
  checkRosterLimits(roles);
  const byId = new Map(roles.map((role) => [role.id, role]));
  const roleIds = roles.map((role) => role.id);
  /** Roles that keep facts: read with the turn's start state (one MGET), whichever the judge routes to. */
  const factRoleIds = roles.filter((role) => role.facts).map((role) => role.id);
  // This process's model outages, one warn line each way (model-outages.ts).
  const outages = createModelOutages();
  const judge: JudgeDependencies = {
    models: options.models,
    breakers: options.breakers,
    outages,
    breaker: createCircuitBreaker(options.judgeBreaker ?? { threshold: 3, cooldownMs: 30_000 }),
    logger: options.logger,
    metrics,
    timeoutMs: Math.min(options.limits.timeoutMs, 20_000),
  };
  /** The MCP reads this caller could be bound to: an anonymous caller gets the public ones only. */
  const mcpToolsFor = (caller: Caller) => (options.mcpTools?.() ?? []).filter((tool) => callerMayUse(tool, caller));
  const answer = createLegAnswer({ ...options, outages, visionTimeoutMs: judge.timeoutMs });
  const continuation = { ...options, byId, mcpToolsFor, answer };
  const finishing = { ...options, byId };

  const legs = {
    /** One turn; `routed` learns the role answering it once the judge (or a resumed question) decided. */
    async run(channel: ChannelDefinition, input: TurnInput, meter: TurnMeter, routed: { roleId?: string }, reads: TurnReads | undefined): Promise<TurnResult> {
      const runId = input.runId || randomUUID();
      const logger = input.logger.child({ runId });
      const started = performance.now();
      const done = (result: TurnResult): TurnResult => {
        const outcome = result.failed ? 'apology' : 'answered';
        metrics.observe('turn_duration_seconds', { channel: channel.id, outcome }, (performance.now() - started) / 1000);
        return { ...result, usage: meter.calls };
      };
      const { resetting, contact, start, feedback } = await startTurn({ ...options, roleIds, factRoleIds }, channel, input, reads);
      /** The turn's result once the state it sent without waiting is written (a failed write fails the turn). */
      const settled = async (result: TurnResult, written?: Promise<void>) => {
        await Promise.all([resetting, written]);
        return done(result);
      };
      const activeRoleId = start?.activeRoleId;
      const step = await continueBatch(continuation, {
        channel,
        input,
        runId,
        logger,
        contact,
        meter,
        routed,
        activeRoleId,
        pending: start?.pending,
        session: start?.session ?? {},
      });
      if ('result' in step) return settled(step.result);
      /** The service's words for the batch's tap, said before the answer to its other messages. */
      const { session, said } = step;
      const leg = await prepareFreshLeg(
        { roles, facts: options.facts, state: options.state, decisions: options.decisions, judge: { ...judge, onModelCall: meter.observe } },
        {
          conversationId: input.conversationId,
          runId,
          firstTurn: input.firstTurn,
          activeRoleId,
          session,
          // The model answers the batch's other messages when the service answered its tap.
          history: said !== undefined && input.tap ? input.tap.history : input.history,
          channelTools: channel.tools,
          mcpTools: mcpToolsFor(callerFor(contact, session)),
          signal: input.signal,
          knownFacts: start?.facts,
          knowledge: { hook: options.knowledge, channel: channel.id, messageId: input.inbound.messageId, metadata: input.inbound.metadata },
          guidance: options.guidance && { hook: options.guidance, audience: { channel: channel.id, site: input.inbound.metadata.siteKey, contact } },
          ...(feedback && said === undefined ? { feedback: true } : {}),
        },
      );
      routed.roleId = leg.role.id;
      const answered = (result: TurnResult) => settled(result, leg.pointerWritten);
      const commented = feedback && said === undefined ? await answerFeedback(feedback, input, channel.id, leg, runId) : undefined;
      if (commented) return answered(commented);
      if (said === undefined) return answered(await answer(channel, input, leg, input.history, undefined, logger, contact, meter));
      input.onTextDelta?.(`${said}\n\n`);
      const reply = await answer(channel, input, leg, input.tap?.history ?? input.history, undefined, logger, contact, meter);
      return answered({ ...reply, text: `${said}\n\n${reply.text}` });
    },
  };

  return {
    startReads: (channel, conversationId, inbound) => startTurnReads(options.state, factRoleIds, channel, conversationId, inbound),

    async runTurn(channel, input, reads) {
      const meter = createTurnMeter(metrics);
      const routed: { roleId?: string } = {};
      try {
        return await legs.run(channel, input, meter, routed, reads);
      } catch (error) {
        // A turn cut short (started over for a newer message, lock lost) still paid for the calls
        // it finished (the judge's): metered now, as the turn that answers meters its own.
        if (input.signal.aborted && meter.calls.length > 0 && options.usage) {
          await recordUsage(finishing, { roleId: routed.roleId ?? 'unrouted', channelId: channel.id, calls: meter.calls });
        }
        throw error;
      }
    },

    finishTurn: (channel, result, delivered) => finishTurn(finishing, channel, result, delivered),

    async resetConversation(conversationId) {
      await options.state.reset(conversationId, roleIds);
    },

    decision: (conversationId, runId) => options.decisions.get(conversationId, runId),

    async activeRole(conversationId) {
      return (await options.state.readTurnStart(conversationId)).activeRoleId ?? defaultRole(roles).id;
    },
  };
}
