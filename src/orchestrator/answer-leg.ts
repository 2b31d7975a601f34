/**
 * A leg's answer from the model, once its role, tier, facts and tools are decided (a fresh leg's
 * or a resumed question's): the channel's grounding and the system prompt, the reply model's
 * call (photos described for a model that can't see them), then what the call left to keep — the
 * session it learned, the question a tool asked — and the turn's result.
 */
import type { ModelMessage } from 'ai';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { ProviderBreakers } from '../model/provider-breaker.js';
import type { ModelProvider } from '../model/provider.js';
import { callerFor } from '../tools/caller.js';
import type { LinkedCustomer } from '../tools/select-entity.js';
import type { ChannelDefinition, TurnInput, TurnResult } from '../contracts/index.js';
import { languageOf } from '../words/language.js';
import { serviceWords } from '../words/service-words.js';
import { callModel, type CallModelResult, type ModelLimits } from './call-model.js';
import { groundingSections, withCustomerContext } from './grounding.js';
import type { TurnMeter } from './metering.js';
import type { PreparedLeg } from './prepare-turn.js';
import type { ConversationState } from './state/conversation-state.js';
import type { DecisionStore } from './state/decision-store.js';
import { questionExpiresAt } from './state/keys.js';
import { buildSystemPrompt, capabilityResolver } from './system-prompt.js';
import { readerReply, readerStream, type ReaderReply } from './answer-leg-reader.js';
import { customerLanguage } from '../words/text-language.js';
import { scopeDenialReporter, toolContextFor } from './tool-context.js';
import { describedHistory, holdsFiles } from './vision.js';
import type { ModelOutages } from './model-outages.js';
import { ModelsUnavailableError } from './failover.js';
import { guidedHandOver } from './guided-handover.js';

export interface AnswerDependencies {
  models: ModelProvider;
  breakers?: ProviderBreakers | undefined;
  /** The process's outage lines: a turn failing in an outage is a debug line (the outage was said once). */
  outages?: ModelOutages | undefined;
  limits: ModelLimits;
  metrics: Metrics;
  state: ConversationState;
  /** Where a leg that leaves a question stores its decision (for the worker its answer comes to). */
  decisions: DecisionStore;
  /** The vision model's deadline when it describes photos (the judge's). */
  visionTimeoutMs: number;
}

/** Answers a prepared leg from its history (`note`: what the system prompt adds for this leg). */
export type LegAnswer = (
  channel: ChannelDefinition,
  input: TurnInput,
  leg: PreparedLeg,
  history: readonly ModelMessage[],
  note: string | undefined,
  logger: Logger,
  contact: LinkedCustomer | undefined,
  meter: TurnMeter,
) => Promise<TurnResult>;

/**
 * Keeps what the model's call left: the session facts it learned, the question a tool asked
 * (with its choices and `choicesExpireAt`, so a retry of this batch shows it again as asked),
 * the leg's decision stored first (its answer continues this leg, on whichever worker).
 */
async function keepCallOutcome(
  { state, decisions }: Pick<AnswerDependencies, 'state' | 'decisions'>,
  input: TurnInput,
  leg: PreparedLeg,
  result: CallModelResult,
  choicesExpireAt: number,
): Promise<void> {
  if (result.session) {
    await state.writeSession(input.conversationId, { ...leg.session, ...result.session });
  }
  const { interrupt } = result;
  if (interrupt) {
    await decisions.put(input.conversationId, leg.decision);
    await state.setPending(input.conversationId, {
      runId: leg.decision.runId,
      toolName: interrupt.toolName,
      question: interrupt.question,
      data: interrupt.data,
      attempts: 0,
      askedIn: input.inbound.messageId,
      roleId: leg.role.id,
      ...(interrupt.choices?.length ? { choices: [...interrupt.choices], choicesExpireAt } : {}),
      ...(interrupt.language !== undefined ? { language: interrupt.language } : {}),
    });
  }
}

/**
 * The reply with the service's own words a tool asked for (`sayToCustomer`): after the
 * model's text, or before a question a tool asked (its choices go with the last part); a word
 * the model already wrote verbatim is not said twice. Streamed as the rest of the reply was.
 */
function withServiceWords(text: string, result: CallModelResult, onTextDelta: ((delta: string) => void) | undefined): string {
  const said = (result.serviceWords ?? []).filter((words) => !text.includes(words));
  if (said.length === 0) return text;
  if (result.interrupt) return [...said, text].join('\n\n');
  onTextDelta?.(`\n\n${said.join('\n\n')}`);
  return [text, ...said].join('\n\n');
}

/**
 * The model's text as the customer gets it: as written, or — on a turn with the business's
 * content in its prompt — read for its verdict (`answer-leg-reader.ts`): the service's "I don't
 * know" (streamed here, the model's text having been held back) or the model's text and the
 * "Source:" line.
 */
function readReply(channel: ChannelDefinition, input: TurnInput, leg: PreparedLeg, result: CallModelResult): ReaderReply {
  if (!leg.knowledge || !result.text || result.interrupt) return { text: result.text, declined: false };
  const handoff = capabilityResolver(channel, leg.role.id)('handoff');
  const read = readerReply(result.text, leg.knowledge.sources, {
    language: customerLanguage(input.inbound.metadata, input.inbound.text),
    // A person is offered where the leg could hand over, and had not already.
    offerPerson: leg.offered.some((tool) => tool.name === handoff) && !result.toolCalls.some((call) => call.toolName === handoff),
    markdownLinks: channel.markdownLinks === true,
  });
  if (read.declined) input.onTextDelta?.(read.text);
  return read;
}

/** The turn's result from the model's call (`text`: the reply, or the service's words for none). */
function legResult(channel: ChannelDefinition, input: TurnInput, leg: PreparedLeg, result: CallModelResult, text: string, choicesExpireAt: number): TurnResult {
  const { decision, role } = leg;
  return {
    runId: decision.runId,
    roleId: role.id,
    offeredTools: decision.offeredTools,
    modelCalls: leg.modelCalls,
    text,
    failed: !result.text,
    toolCalls: result.toolCalls,
    ...(leg.guidance ? { guidance: { entries: leg.guidance.entries, applied: leg.guidance.applied } } : {}),
    ...(result.interrupt?.choices
      ? {
          choices: result.interrupt.choices,
          choicesExpireAt,
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
}

/** The leg's answer (see `LegAnswer`); a model that fails is no reply: the turn fails and its message is retried. */
export function createLegAnswer(dependencies: AnswerDependencies): LegAnswer {
  const { models, breakers, outages, metrics } = dependencies;
  return async (channel, input, leg, history, note, logger, contact, meter) => {
    const { decision, role } = leg;
    const caller = callerFor(contact, leg.session);
    const grounding = groundingSections(await channel.grounding(input, leg.session, caller));
    const toolContext = toolContextFor(channel, input, { runId: decision.runId, roleId: role.id, facts: decision.facts, session: leg.session, caller });
    const handedOver = await guidedHandOver(channel, input, leg, toolContext, { logger, metrics });
    const system = buildSystemPrompt({
      role,
      channel,
      grounding: grounding.verified,
      caller: caller.kind === 'anonymous' ? 'anonymous' : 'identified',
      facts: decision.facts,
      inScope: decision.inScope,
      note: [note, handedOver].filter(Boolean).join('\n\n') || undefined,
      knowledge: leg.knowledge?.section,
      guidance: leg.guidance?.section,
    });
    // The business's content in the prompt: the reply's verdict on it is held back from the stream.
    const knowledge = leg.knowledge;
    const reading = knowledge && input.onTextDelta ? readerStream(input.onTextDelta) : undefined;
    const started = performance.now();
    const messages = withCustomerContext(history, grounding.untrusted);
    let described: Promise<readonly ModelMessage[]> | undefined;
    const vision = { models, breakers, outages, timeoutMs: dependencies.visionTimeoutMs, logger, metrics };
    try {
      const result = await callModel({
        tier: decision.tier,
        entries: models.entries(decision.tier),
        breakers,
        outages,
        observer: meter.observe,
        logger,
        metrics,
        system,
        messages,
        // Photos for a reply model that can't see them: described once per turn by MODEL_VISION.
        ...(holdsFiles(messages) ? { textOnlyMessages: () => (described ??= describedHistory(vision, messages, input.signal, meter.observe)) } : {}),
        tools: leg.offered,
        toolContext,
        onScopeDenied: scopeDenialReporter(metrics, logger, { roleId: role.id, channelId: channel.id, caller }),
        limits: dependencies.limits,
        signal: input.signal,
        onTextDelta: reading ? reading.delta : input.onTextDelta,
        beforeAction: input.beforeAction,
      });
      reading?.end();
      metrics.increment('model_calls_total', { purpose: 'reply' });
      const choicesExpireAt = questionExpiresAt(result.interrupt?.expiresAt);
      await keepCallOutcome(dependencies, input, leg, result, choicesExpireAt);
      const read = readReply(channel, input, leg, result);
      // No text at all (the model's steps spent on tools): the service's words, in the channel's language.
      // A model that fails is no reply: the turn fails and its message is retried.
      // The service's own words a tool asked for go with it, whatever the model wrote.
      const body = read.text
        ? withServiceWords(read.text, result, input.onTextDelta)
        : (result.serviceWords?.join('\n\n') ?? serviceWords(languageOf(input.inbound.metadata.language)).emptyReply);
      if (read.sources) input.onTextDelta?.(`\n\n${read.sources}`);
      const text = read.sources ? `${body}\n\n${read.sources}` : body;
      // Nothing found, or the passages did not answer: a miss, carried to the turn's finish (once per reply).
      const missed = knowledge && (knowledge.sources.length === 0 || read.declined) ? knowledge.miss : undefined;
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
      return { ...legResult(channel, input, leg, result, text, choicesExpireAt), ...(missed ? { knowledgeMiss: missed } : {}) };
    } catch (error) {
      // No reply stands in for the model's: the turn fails, and its message is retried (an
      // outage: every entry down) or given up on (a refusal for good), visibly either way.
      if (input.signal.aborted) throw error;
      metrics.increment('model_calls_total', { purpose: 'reply' });
      metrics.increment('model_failures_total');
      // Every model out (retried): the outage's own line said it; a refusal for good is an error.
      if (error instanceof ModelsUnavailableError) logger.debug('model-failed', { roleId: role.id, error });
      else logger.error('model-failed', { roleId: role.id, error });
      throw error;
    }
  };
}
