/**
 * The orchestrator's entry point. It only wires the steps of a leg — grounding, judge and
 * state (prepare-turn), brief and prompt, tool offer, model, post-turn — each in its own file,
 * and never branches on which role or channel is running. A customer's answer to a pending
 * question is a continuation leg: it reuses the stored decision, or is refused if it expired.
 * Who is talking is asked of the channel once per turn (`identify`); the leg offers only the
 * reads that caller may use and binds every call to them.
 */
import { randomUUID } from 'node:crypto';
import type { ModelMessage } from 'ai';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { ProviderBreakers } from '../model/provider-breaker.js';
import type { ModelProvider } from '../model/provider.js';
import { callerFor } from '../tools/caller.js';
import type { LinkedCustomer } from '../tools/select-entity.js';
import { callerMayUse } from '../tools/scope.js';
import type { AssistantTool, Caller, SessionFacts } from '../contracts/tool.js';
import { callModel, type ModelLimits } from './call-model.js';
import { createCircuitBreaker } from './circuit-breaker.js';
import type { ChannelDefinition, RoleDefinition, TurnInput, TurnResult } from '../contracts/index.js';
import { checkRosterLimits } from './define-role.js';
import { groundingSections, withCustomerContext } from './grounding.js';
import type { JudgeDependencies } from './judge.js';
import { createTurnMeter, type TurnMeter, type UsageRecorder } from './metering.js';
import { runPostTurn } from './post-turn.js';
import { prepareFreshLeg, type PreparedLeg } from './prepare-turn.js';
import { resumeContinuation } from './resume-continuation.js';
import { languageOf } from '../words/language.js';
import { serviceWords } from '../words/service-words.js';
import type { ConversationState } from './state/conversation-state.js';
import type { DecisionStore, StoredDecision } from './state/decision-store.js';
import type { FactStore } from './state/fact-store.js';
import { questionExpiresAt } from './state/keys.js';
import { buildSystemPrompt } from './system-prompt.js';
import { scopeDenialReporter, toolContextFor } from './tool-context.js';
import { describedHistory, holdsFiles } from './vision.js';

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
}

export interface Orchestrator {
  runTurn(channel: ChannelDefinition, input: TurnInput): Promise<TurnResult>;
  /** Post-turn work for a leg whose reply was (or failed to be) delivered. Never throws. */
  finishTurn(channel: ChannelDefinition, result: Pick<TurnResult, 'roleId' | 'usage' | 'postTurn'>, delivered: boolean): Promise<void>;
  /** Clears a conversation's orchestrator state in one command (the customer's reset). */
  resetConversation(conversationId: string): Promise<void>;
  /** The decision a leg stored, while it has not expired (for the CLI's `/decision`). */
  decision(conversationId: string, runId: string): Promise<StoredDecision | undefined>;
}

export function createOrchestrator(options: OrchestratorOptions): Orchestrator {
  const { roles, metrics } = options;
  checkRosterLimits(roles);
  const byId = new Map(roles.map((role) => [role.id, role]));
  const roleIds = roles.map((role) => role.id);
  /** Roles that keep facts: read with the turn's start state (one MGET), whichever the judge routes to. */
  const factRoleIds = roles.filter((role) => role.facts).map((role) => role.id);
  const judge: JudgeDependencies = {
    models: options.models,
    breakers: options.breakers,
    breaker: createCircuitBreaker(options.judgeBreaker ?? { threshold: 3, cooldownMs: 30_000 }),
    logger: options.logger,
    metrics,
    timeoutMs: Math.min(options.limits.timeoutMs, 20_000),
  };
  /** The MCP reads this caller could be bound to: an anonymous caller gets the public ones only. */
  const mcpToolsFor = (caller: Caller) => (options.mcpTools?.() ?? []).filter((tool) => callerMayUse(tool, caller));

  const answer = async (
    channel: ChannelDefinition,
    input: TurnInput,
    leg: PreparedLeg,
    history: readonly ModelMessage[],
    note: string | undefined,
    logger: Logger,
    contact: LinkedCustomer | undefined,
    meter: TurnMeter,
  ): Promise<TurnResult> => {
    const { decision, role } = leg;
    const caller = callerFor(contact, leg.session);
    const grounding = groundingSections(await channel.grounding(input, leg.session, caller));
    const system = buildSystemPrompt({
      role,
      channel,
      grounding: grounding.verified,
      caller: caller.kind === 'anonymous' ? 'anonymous' : 'identified',
      facts: decision.facts,
      inScope: decision.inScope,
      note,
    });
    const base = {
      runId: decision.runId,
      roleId: role.id,
      offeredTools: decision.offeredTools,
      modelCalls: leg.modelCalls,
    };
    const started = performance.now();
    const messages = withCustomerContext(history, grounding.untrusted);
    let described: Promise<readonly ModelMessage[]> | undefined;
    const vision = { models: options.models, breakers: options.breakers, timeoutMs: judge.timeoutMs, logger, metrics };
    try {
      const result = await callModel({
        tier: decision.tier,
        entries: options.models.entries(decision.tier),
        breakers: options.breakers,
        observer: meter.observe,
        logger,
        metrics,
        system,
        messages,
        // Photos for a reply model that can't see them: described once per turn by MODEL_VISION.
        ...(holdsFiles(messages) ? { textOnlyMessages: () => (described ??= describedHistory(vision, messages, input.signal, meter.observe)) } : {}),
        tools: leg.offered,
        toolContext: toolContextFor(channel, input, { runId: decision.runId, roleId: role.id, facts: decision.facts, session: leg.session, caller }),
        onScopeDenied: scopeDenialReporter(metrics, logger, { roleId: role.id, channelId: channel.id, caller }),
        limits: options.limits,
        signal: input.signal,
        onTextDelta: input.onTextDelta,
        beforeAction: input.beforeAction,
      });
      metrics.increment('model_calls_total', { purpose: 'reply' });
      if (result.session) {
        await options.state.writeSession(input.conversationId, { ...leg.session, ...result.session });
      }
      if (result.interrupt) {
        await options.state.setPending(input.conversationId, {
          runId: decision.runId,
          toolName: result.interrupt.toolName,
          question: result.interrupt.question,
          data: result.interrupt.data,
          attempts: 0,
          ...(result.interrupt.language !== undefined ? { language: result.interrupt.language } : {}),
        });
      }
      // No text at all (the model's steps spent on tools): the service's words, in the channel's language.
      // A model that fails is no reply: the turn fails and its message is retried.
      const text = result.text || serviceWords(languageOf(input.inbound.metadata.language)).emptyReply;
      logger.info('turn-answered', {
        roleId: role.id,
        tier: decision.tier,
        model: result.entry.label,
        inScope: decision.inScope,
        degraded: decision.degraded,
        judgeCalls: leg.modelCalls,
        offered: decision.offeredTools.length,
        toolCalls: result.toolCalls.length,
        systemChars: system.length,
        ms: Math.round(performance.now() - started),
      });
      return {
        ...base,
        text,
        failed: !result.text,
        toolCalls: result.toolCalls,
        ...(result.interrupt?.choices
          ? {
              choices: result.interrupt.choices,
              choicesExpireAt: questionExpiresAt(result.interrupt.expiresAt),
              ...(result.interrupt.language !== undefined ? { choicesLanguage: result.interrupt.language } : {}),
            }
          : {}),
        postTurn: {
          conversationId: input.conversationId,
          roleId: role.id,
          facts: decision.facts,
          factsVersion: decision.factsVersion,
          degraded: decision.degraded,
          offeredTools: decision.offeredTools,
          toolCalls: result.toolCalls,
          replyText: text,
          channelId: channel.id,
        },
      };
    } catch (error) {
      // No reply stands in for the model's: the turn fails, and its message is retried (an
      // outage: every entry down) or given up on (a refusal for good), visibly either way.
      if (input.signal.aborted) throw error;
      metrics.increment('model_calls_total', { purpose: 'reply' });
      metrics.increment('model_failures_total');
      logger.error('model-failed', { roleId: role.id, error });
      throw error;
    }
  };

  const legs = {
    /** One turn; `routed` learns the role answering it once the judge (or a resumed question) decided. */
    async run(channel: ChannelDefinition, input: TurnInput, meter: TurnMeter, routed: { roleId?: string }): Promise<TurnResult> {
      const runId = input.runId || randomUUID();
      const logger = input.logger.child({ runId });
      const started = performance.now();
      const done = (result: TurnResult): TurnResult => {
        const outcome = result.failed ? 'apology' : 'answered';
        metrics.observe('turn_duration_seconds', { channel: channel.id, outcome }, (performance.now() - started) / 1000);
        return { ...result, usage: meter.calls };
      };
      // Once per turn, before anything is offered: who the service verified is talking. Read
      // alongside the conversation's state (independent keys: one round trip's wait, not two).
      const [contact, start] = await Promise.all([
        channel.identify?.(input.inbound),
        input.firstTurn
          ? options.state.reset(input.conversationId, roleIds).then(() => undefined)
          : options.state.readTurnStart(input.conversationId, factRoleIds),
      ]);
      let activeRoleId: string | undefined;
      let session: SessionFacts = {};
      if (start) {
        activeRoleId = start.activeRoleId;
        session = start.session;
        if (start.pending) {
          // Resuming clears the pending question: never done twice.
          await input.beforeAction?.();
          const caller = callerFor(contact, session);
          const outcome = await resumeContinuation(
            { roles: byId, decisions: options.decisions, state: options.state, logger, metrics },
            { channel, input: { ...input, runId }, pending: start.pending, session, caller, catalogue: [...channel.tools, ...mcpToolsFor(caller)] },
          );
          if (outcome.kind === 'resume') {
            routed.roleId = outcome.leg.role.id;
            return done(await answer(channel, input, outcome.leg, input.history, outcome.note, logger, contact, meter));
          }
          // The answer was no answer (e.g. another request while a confirmation waited): a fresh turn.
          if (outcome.kind !== 'fresh') return done(outcome.result);
          session = outcome.session;
        }
      }
      const leg = await prepareFreshLeg(
        { roles, facts: options.facts, state: options.state, decisions: options.decisions, judge: { ...judge, onModelCall: meter.observe } },
        {
          conversationId: input.conversationId,
          runId,
          firstTurn: input.firstTurn,
          activeRoleId,
          session,
          history: input.history,
          channelTools: channel.tools,
          mcpTools: mcpToolsFor(callerFor(contact, session)),
          signal: input.signal,
          knownFacts: start?.facts,
        },
      );
      routed.roleId = leg.role.id;
      return done(await answer(channel, input, leg, input.history, undefined, logger, contact, meter));
    },
  };

  return {
    async runTurn(channel, input) {
      const meter = createTurnMeter(metrics);
      const routed: { roleId?: string } = {};
      try {
        return await legs.run(channel, input, meter, routed);
      } catch (error) {
        // A turn cut short (started over for a newer message, lock lost) still paid for the calls
        // it finished (the judge's): metered now, as the turn that answers meters its own.
        if (input.signal.aborted && meter.calls.length > 0 && options.usage) {
          const roleId = routed.roleId ?? 'unrouted';
          await options.usage({ roleId, channelId: channel.id, calls: meter.calls }).catch((usageError: unknown) => {
            metrics.increment('usage_record_failed_total');
            options.logger.error('usage-record-failed', { roleId, error: usageError });
          });
        }
        throw error;
      }
    },

    async finishTurn(channel, result, delivered) {
      // Metering happens after the reply, outside the orchestrator's state: it costs the turn nothing.
      if (result.usage?.length && options.usage) {
        await options.usage({ roleId: result.roleId, channelId: channel.id, calls: result.usage }).catch((error: unknown) => {
          metrics.increment('usage_record_failed_total');
          options.logger.error('usage-record-failed', { roleId: result.roleId, error });
        });
      }
      const role = byId.get(result.roleId);
      if (!role || !result.postTurn) return;
      try {
        await runPostTurn({ facts: options.facts, logger: options.logger, metrics }, role, channel, result.postTurn, delivered);
      } catch (error) {
        options.logger.error('post-turn-failed', { roleId: role.id, error });
      }
    },

    async resetConversation(conversationId) {
      await options.state.reset(conversationId, roleIds);
    },

    decision: (conversationId, runId) => options.decisions.get(conversationId, runId),
  };
}
