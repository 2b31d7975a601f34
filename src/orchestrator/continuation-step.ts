/**
 * Before a fresh leg: whether the batch answers a pending question (resumed through
 * `resume-continuation`, its answer from the model or, when the model can't give it, the
 * service's words) or taps an answer button with nothing pending (refused in the service's words).
 * Either way the batch's other messages may still need a fresh leg's answer.
 */
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { callerFor } from '../tools/caller.js';
import type { LinkedCustomer } from '../tools/select-entity.js';
import type { AssistantTool, Caller, SessionFacts, ToolCallContext } from '../contracts/tool.js';
import type { ChannelDefinition, RoleDefinition, TurnInput, TurnResult } from '../contracts/index.js';
import { languageOf } from '../words/language.js';
import { serviceWords } from '../words/service-words.js';
import type { LegAnswer } from './answer-leg.js';
import { defaultRole } from './judge.js';
import type { TurnMeter } from './metering.js';
import type { PreparedLeg } from './prepare-turn.js';
import { resumeContinuation, type UnlistedResume } from './resume-continuation.js';
import type { ConversationState, PendingInterrupt } from './state/conversation-state.js';
import type { DecisionStore } from './state/decision-store.js';
import { toolContextFor } from './tool-context.js';

export interface ContinuationStepDependencies {
  roles: readonly RoleDefinition[];
  byId: ReadonlyMap<string, RoleDefinition>;
  decisions: DecisionStore;
  state: ConversationState;
  metrics: Metrics;
  resumeUnlisted?: UnlistedResume | undefined;
  staleTap?: ((choice: string, context: ToolCallContext) => Promise<string | undefined>) | undefined;
  /** The MCP reads this caller could be bound to. */
  mcpToolsFor(caller: Caller): readonly AssistantTool[];
  answer: LegAnswer;
}

/** The leg's turn as the batch has it so far. */
export interface ContinuationTurn {
  channel: ChannelDefinition;
  input: TurnInput;
  runId: string;
  logger: Logger;
  contact: LinkedCustomer | undefined;
  meter: TurnMeter;
  /** The question pending at the turn's start, if any. */
  pending: PendingInterrupt | undefined;
  activeRoleId: string | undefined;
  session: SessionFacts;
  /** Learns the role answering once a resumed question decided it. */
  routed: { roleId?: string };
}

/**
 * What the step leaves: the turn's result (answered here), or a fresh leg to run with this
 * session, after the service's words for the batch's tap (`said`) when it had some.
 */
export type ContinuationStep = { result: TurnResult } | { session: SessionFacts; said?: string };

/** The leg's input as the pending question's tool reads it: the batch's tap, when it has one, on its own. */
function answerInput(input: TurnInput, runId: string): TurnInput {
  if (!input.tap) return { ...input, runId };
  const { text, choice, receivedAt } = input.tap;
  return { ...input, runId, inbound: { ...input.inbound, text, receivedAt, metadata: { ...input.inbound.metadata, choice } } };
}

/** A leg the service answers in its own words, without the model. */
function serviceResult(runId: string, roleId: string, text: string): TurnResult {
  return { runId, roleId, text, failed: true, offeredTools: [], toolCalls: [], modelCalls: 0 };
}

/**
 * The question this batch's own turn asked, shown again as it was asked: a retry of that turn
 * (its reply never stored) answers nothing, so the message that led to the question is never
 * taken for its answer (a chosen "1" for a confirmation's yes, a tap for a foreign one).
 */
function askedAgain(pending: PendingInterrupt, runId: string, roleId: string): TurnResult {
  return {
    ...serviceResult(runId, pending.roleId ?? roleId, pending.question),
    failed: false,
    ...(pending.choices?.length
      ? {
          choices: pending.choices,
          ...(pending.choicesExpireAt !== undefined ? { choicesExpireAt: pending.choicesExpireAt } : {}),
          ...(pending.language !== undefined ? { choicesLanguage: pending.language } : {}),
        }
      : {}),
  };
}

/**
 * The question this batch answers: none when a later batch finds it answered (its reply is
 * out; the DEL ends it). One this very batch asked is shown again before (`askedAgain`).
 */
async function openQuestion(state: ConversationState, input: TurnInput, pending: PendingInterrupt | undefined): Promise<PendingInterrupt | undefined> {
  if (!pending) return undefined;
  if (pending.answeredBy === undefined || pending.answeredBy === input.inbound.messageId) return pending;
  await state.clearPending(input.conversationId);
  return undefined;
}

/**
 * A resumed question's answer from the model; when the model can't give it, the service's own
 * words for the result (a change that ran is told, never left to a retry that could ask again).
 */
async function answerResumed(
  dependencies: ContinuationStepDependencies,
  turn: ContinuationTurn,
  outcome: { leg: PreparedLeg; note: string; said?: string },
): Promise<TurnResult> {
  const { channel, input, logger, contact, meter } = turn;
  const note =
    input.tap && input.inbound.text.trim() !== ''
      ? `${outcome.note} The customer also wrote the other messages since the question: answer them too.`
      : outcome.note;
  try {
    return await dependencies.answer(channel, input, outcome.leg, input.history, note, logger, contact, meter);
  } catch (error) {
    if (input.signal.aborted || outcome.said === undefined) throw error;
    dependencies.metrics.increment('continuations_total', { outcome: 'said_by_service' });
    logger.warn('continuation-said-by-service', { roleId: outcome.leg.role.id, error });
    return { ...serviceResult(outcome.leg.decision.runId, outcome.leg.role.id, outcome.said), offeredTools: outcome.leg.decision.offeredTools };
  }
}

/** Resumes the pending question the batch answers, or refuses its tap when nothing is pending. */
export async function continueBatch(dependencies: ContinuationStepDependencies, turn: ContinuationTurn): Promise<ContinuationStep> {
  const { channel, input, runId, logger, contact } = turn;
  const { metrics } = dependencies;
  let { session } = turn;
  const others = input.inbound.text.trim() !== '';
  if (turn.pending && turn.pending.askedIn === input.inbound.messageId) {
    metrics.increment('continuations_total', { outcome: 'shown_again' });
    logger.warn('continuation-shown-again', { parentRunId: turn.pending.runId, toolName: turn.pending.toolName });
    return { result: askedAgain(turn.pending, runId, turn.activeRoleId ?? defaultRole(dependencies.roles).id) };
  }
  const pending = await openQuestion(dependencies.state, input, turn.pending);
  if (pending) {
    // Resuming ends the question (once: a retry of this batch resumes the same answer again).
    await input.beforeAction?.();
    const caller = callerFor(contact, session);
    const outcome = await resumeContinuation(
      { roles: dependencies.byId, decisions: dependencies.decisions, state: dependencies.state, logger, metrics, resumeUnlisted: dependencies.resumeUnlisted },
      { channel, input: answerInput(input, runId), pending, session, caller, catalogue: [...channel.tools, ...dependencies.mcpToolsFor(caller)] },
    );
    if (outcome.kind === 'resume') {
      turn.routed.roleId = outcome.leg.role.id;
      return { result: await answerResumed(dependencies, turn, outcome) };
    }
    // A tap refused on its own: the batch's other messages still get their answer.
    if (outcome.kind === 'refused' && input.tap && others) return { session, said: outcome.result.text };
    // The answer was no answer (e.g. another request while a confirmation waited): a fresh turn.
    if (outcome.kind !== 'fresh') return { result: outcome.result };
    session = outcome.session;
  } else if (input.tap) {
    // A tap when nothing is pending (an old message's button, a forged one): refused in the service's words.
    await input.beforeAction?.();
    const context = toolContextFor(channel, answerInput(input, runId), { runId, roleId: 'none', facts: {}, session, caller: callerFor(contact, session) });
    const said = (await dependencies.staleTap?.(input.tap.choice, context)) ?? serviceWords(languageOf(input.inbound.metadata.language)).questionExpired;
    metrics.increment('continuations_total', { outcome: 'refused' });
    logger.warn('continuation-refused', { reason: 'no-question', choice: input.tap.choice.slice(0, 100) });
    if (!others) return { result: serviceResult(runId, turn.activeRoleId ?? defaultRole(dependencies.roles).id, said) };
    return { session, said };
  }
  return { session };
}
