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
import type { AssistantTool, Caller, SessionFacts, ToolCallContext } from '../contracts/tool.js';
import { callModel, type ModelLimits } from './call-model.js';
import { createCircuitBreaker } from './circuit-breaker.js';
import type { ChannelDefinition, RoleDefinition, TurnInput, TurnResult } from '../contracts/index.js';
import { checkRosterLimits } from './define-role.js';
import { groundingSections, withCustomerContext } from './grounding.js';
import { defaultRole, type JudgeDependencies } from './judge.js';
import { createTurnMeter, type TurnMeter, type UsageRecorder } from './metering.js';
import { runPostTurn } from './post-turn.js';
import { prepareFreshLeg, type PreparedLeg, type TurnKnowledge } from './prepare-turn.js';
import { resumeContinuation, type UnlistedResume } from './resume-continuation.js';
import { languageOf } from '../words/language.js';
import { serviceWords } from '../words/service-words.js';
import type { ConversationState, PendingInterrupt } from './state/conversation-state.js';
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
  /** Resumes a pending question whose tool is not offered right now (a confirmation while its server is unreachable). */
  resumeUnlisted?: UnlistedResume;
  /** The service's words for a tap that comes when no question is pending (undefined: the generic refusal). */
  staleTap?: (choice: string, context: ToolCallContext) => Promise<string | undefined>;
  /** The business's published knowledge (src/knowledge/): cited passages in the brief of a turn that needs them. */
  knowledge?: TurnKnowledge;
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

/** The leg's input as the pending question's tool reads it: the batch's tap, when it has one, on its own. */
function answerInput(input: TurnInput, runId: string): TurnInput {
  if (!input.tap) return { ...input, runId };
  return { ...input, runId, inbound: { ...input.inbound, text: input.tap.text, metadata: { ...input.inbound.metadata, choice: input.tap.choice } } };
}

/** A leg the service answers in its own words, without the model. */
function serviceResult(runId: string, roleId: string, text: string): TurnResult {
  return { runId, roleId, text, failed: true, offeredTools: [], toolCalls: [], modelCalls: 0 };
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
      knowledge: leg.knowledge,
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
          askedIn: input.inbound.messageId,
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

  /**
   * The question this batch answers: none when a later batch finds it answered (its reply is
   * out; the DEL ends it) or when this very batch asked it (a retry of the turn that asked).
   */
  const openQuestion = async (input: TurnInput, pending: PendingInterrupt | undefined): Promise<PendingInterrupt | undefined> => {
    if (!pending || pending.askedIn === input.inbound.messageId) return undefined;
    if (pending.answeredBy === undefined || pending.answeredBy === input.inbound.messageId) return pending;
    await options.state.clearPending(input.conversationId);
    return undefined;
  };

  /**
   * A resumed question's answer from the model; when the model can't give it, the service's own
   * words for the result (a change that ran is told, never left to a retry that could ask again).
   */
  const answerResumed = async (
    channel: ChannelDefinition,
    input: TurnInput,
    outcome: { leg: PreparedLeg; note: string; said?: string },
    logger: Logger,
    contact: LinkedCustomer | undefined,
    meter: TurnMeter,
  ): Promise<TurnResult> => {
    const note =
      input.tap && input.inbound.text.trim() !== ''
        ? `${outcome.note} The customer also wrote the other messages since the question: answer them too.`
        : outcome.note;
    try {
      return await answer(channel, input, outcome.leg, input.history, note, logger, contact, meter);
    } catch (error) {
      if (input.signal.aborted || outcome.said === undefined) throw error;
      metrics.increment('continuations_total', { outcome: 'said_by_service' });
      logger.warn('continuation-said-by-service', { roleId: outcome.leg.role.id, error });
      return { ...serviceResult(outcome.leg.decision.runId, outcome.leg.role.id, outcome.said), offeredTools: outcome.leg.decision.offeredTools };
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
      /** The service's words for the batch's tap, said before the answer to its other messages. */
      let said: string | undefined;
      const others = input.inbound.text.trim() !== '';
      if (start) {
        activeRoleId = start.activeRoleId;
        session = start.session;
      }
      const pending = await openQuestion(input, start?.pending);
      if (pending) {
        // Resuming ends the question (once: a retry of this batch resumes the same answer again).
        await input.beforeAction?.();
        const caller = callerFor(contact, session);
        const outcome = await resumeContinuation(
          { roles: byId, decisions: options.decisions, state: options.state, logger, metrics, resumeUnlisted: options.resumeUnlisted },
          { channel, input: answerInput(input, runId), pending, session, caller, catalogue: [...channel.tools, ...mcpToolsFor(caller)] },
        );
        if (outcome.kind === 'resume') {
          routed.roleId = outcome.leg.role.id;
          return done(await answerResumed(channel, input, outcome, logger, contact, meter));
        }
        // A tap refused on its own: the batch's other messages still get their answer.
        if (outcome.kind === 'refused' && input.tap && others) said = outcome.result.text;
        // The answer was no answer (e.g. another request while a confirmation waited): a fresh turn.
        else if (outcome.kind !== 'fresh') return done(outcome.result);
        else session = outcome.session;
      } else if (input.tap) {
        // A tap when nothing is pending (an old message's button, a forged one): refused in the service's words.
        await input.beforeAction?.();
        const context = toolContextFor(channel, answerInput(input, runId), { runId, roleId: 'none', facts: {}, session, caller: callerFor(contact, session) });
        said = (await options.staleTap?.(input.tap.choice, context)) ?? serviceWords(languageOf(input.inbound.metadata.language)).questionExpired;
        metrics.increment('continuations_total', { outcome: 'refused' });
        logger.warn('continuation-refused', { reason: 'no-question', choice: input.tap.choice.slice(0, 100) });
        if (!others) return done(serviceResult(runId, activeRoleId ?? defaultRole(roles).id, said));
      }
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
          knowledge: { hook: options.knowledge, channel: channel.id, metadata: input.inbound.metadata },
        },
      );
      routed.roleId = leg.role.id;
      if (said === undefined) return done(await answer(channel, input, leg, input.history, undefined, logger, contact, meter));
      input.onTextDelta?.(`${said}\n\n`);
      const answered = await answer(channel, input, leg, input.tap?.history ?? input.history, undefined, logger, contact, meter);
      return done({ ...answered, text: `${said}\n\n${answered.text}` });
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
