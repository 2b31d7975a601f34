/**
 * Step 6, the customer's answer to a question a channel tool asked: a continuation leg. It
 * judges nothing — it reuses the decision stored for the run that asked (this process's copy,
 * else one GET) and stores it again under its own run id — and is refused, never re-judged,
 * when that decision has expired (a fixed reply, in the question's language). The tool's
 * `resume` turns the answer into a result (or asks again), then the model continues with the
 * same role, tier, facts and tools.
 */
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { AssistantTool, Caller, ResumeOutcome, SessionFacts, ToolCallContext } from '../contracts/tool.js';
import type { ChannelDefinition, RoleDefinition, TurnInput, TurnResult } from '../contracts/index.js';
import { languageOf } from '../words/language.js';
import { serviceWords } from '../words/service-words.js';
import { defaultRole } from './judge.js';
import type { PreparedLeg } from './prepare-turn.js';
import type { ConversationState, PendingInterrupt } from './state/conversation-state.js';
import type { DecisionStore } from './state/decision-store.js';
import { questionExpiresAt } from './state/keys.js';
import { toolContextFor } from './tool-context.js';

export type ContinuationOutcome =
  | { kind: 'refused' | 'asked'; result: TurnResult }
  | { kind: 'resume'; leg: PreparedLeg; note: string; said?: string }
  | { kind: 'fresh'; session: SessionFacts };

/**
 * Resumes a pending question whose tool is not offered right now (its server unreachable):
 * undefined when no one owns that question.
 */
export type UnlistedResume = (toolName: string, data: unknown, answer: string, context: ToolCallContext) => Promise<ResumeOutcome | undefined>;

export interface ContinuationDependencies {
  roles: ReadonlyMap<string, RoleDefinition>;
  decisions: DecisionStore;
  state: ConversationState;
  logger: Logger;
  metrics: Metrics;
  resumeUnlisted?: UnlistedResume | undefined;
}

export async function resumeContinuation(
  dependencies: ContinuationDependencies,
  leg: {
    channel: ChannelDefinition;
    input: TurnInput;
    pending: PendingInterrupt;
    session: SessionFacts;
    caller: Caller;
    /** The tools this caller may be offered (the decision's names are looked up here). */
    catalogue: readonly AssistantTool[];
  },
): Promise<ContinuationOutcome> {
  const { decisions, state, logger, metrics } = dependencies;
  const { input, pending, catalogue } = leg;
  const conversationId = input.conversationId;
  const stored = await decisions.get(conversationId, pending.runId);
  const role = stored ? dependencies.roles.get(stored.roleId) : undefined;
  const decision = stored ? { ...stored, runId: input.runId } : undefined;
  const tool = catalogue.find((candidate) => candidate.name === pending.toolName);
  const context =
    decision && role
      ? toolContextFor(leg.channel, input, { runId: input.runId, roleId: role.id, facts: decision.facts, session: leg.session, caller: leg.caller })
      : undefined;
  // A question is answered by its own tool, never by the model reading the answer as words.
  const outcome = !context
    ? undefined
    : tool?.resume
      ? await tool.resume(input.inbound.text, pending.data, context)
      : await dependencies.resumeUnlisted?.(pending.toolName, pending.data, input.inbound.text, context);
  if (!decision || !role || !outcome) {
    await state.clearPending(conversationId);
    metrics.increment('continuations_total', { outcome: 'refused' });
    logger.warn('continuation-refused', { parentRunId: pending.runId, reason: !decision || !role ? 'decision-expired' : 'tool-unavailable' });
    return {
      kind: 'refused',
      result: {
        runId: input.runId,
        roleId: stored?.roleId ?? defaultRole(dependencies.roles.values()).id,
        // The service's words, never the model's: in the question's language, else the channel's.
        text: serviceWords(languageOf(pending.language, input.inbound.metadata.language)).questionExpired,
        failed: true,
        offeredTools: [],
        toolCalls: [],
        modelCalls: 0,
      },
    };
  }

  if ('fresh' in outcome || 'reply' in outcome) {
    await state.clearPending(conversationId);
    metrics.increment('continuations_total', { outcome: 'fresh' in outcome ? 'dropped' : 'answered' });
    if ('fresh' in outcome) return { kind: 'fresh', session: leg.session };
    return {
      kind: 'refused',
      result: { runId: input.runId, roleId: role.id, text: outcome.reply, failed: false, offeredTools: decision.offeredTools, toolCalls: [], modelCalls: 0 },
    };
  }

  // Stored under this leg's run only when the leg goes on (asks again or resumes): an answer
  // that drops the question (a new turn) or gets a fixed reply stores nothing.
  await decisions.put(conversationId, decision);
  if ('askAgain' in outcome) {
    const { askAgain } = outcome;
    const language = askAgain.language ?? pending.language;
    const choices = askAgain.choices?.length ? { choices: [...askAgain.choices], choicesExpireAt: questionExpiresAt(askAgain.expiresAt) } : undefined;
    // Asked in reply to this batch (a confirmation after a chosen value, a question again): only a
    // later message answers it; this batch's retry shows it again, never takes its answer for this one.
    await state.setPending(conversationId, {
      runId: input.runId,
      toolName: pending.toolName,
      question: askAgain.question,
      data: askAgain.data,
      attempts: pending.attempts + 1,
      askedIn: input.inbound.messageId,
      roleId: role.id,
      ...choices,
      ...(language !== undefined ? { language } : {}),
    });
    metrics.increment('continuations_total', { outcome: 'asked_again' });
    return {
      kind: 'asked',
      result: {
        runId: input.runId,
        roleId: role.id,
        text: askAgain.question,
        failed: false,
        ...(choices ? { ...choices, ...(language !== undefined ? { choicesLanguage: language } : {}) } : {}),
        offeredTools: decision.offeredTools,
        toolCalls: [],
        modelCalls: 0,
      },
    };
  }

  // Kept, marked answered by this batch: its retry (a model that failed, a worker that died
  // before the reply) resumes the same answer again and gets the same outcome, never a fresh
  // turn that could ask for the change again. A later message finds it over.
  await state.setPending(conversationId, { ...pending, answeredBy: input.inbound.messageId });
  let session = leg.session;
  if (outcome.session) {
    session = { ...session, ...outcome.session };
    await state.writeSession(conversationId, session);
  }
  metrics.increment('continuations_total', { outcome: 'resumed' });
  const byName = new Map(catalogue.map((candidate) => [candidate.name, candidate]));
  const offered = decision.offeredTools.flatMap((name) => byName.get(name) ?? []);
  return {
    kind: 'resume',
    leg: { decision, role, offered, session, modelCalls: 0 },
    note: `The customer just answered the question asked through ${pending.toolName}. Result: ${JSON.stringify(outcome.output)}. Continue from there.`,
    ...(outcome.said !== undefined ? { said: outcome.said } : {}),
  };
}
