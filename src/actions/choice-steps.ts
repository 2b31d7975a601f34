/**
 * A write's enum argument the model left out or got wrong is asked of the customer before
 * anything is proposed: the partly frozen call waits in the pending question's data, and the
 * customer's answer (a tap or a typed number or name) fills it and the call goes on.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { McpWriteTool } from '../tools/mcp-tool-source.js';
import { ToolScopeError } from '../tools/scope.js';
import { ToolInterrupt, type ResumeOutcome, type ToolCallContext } from '../contracts/tool.js';
import type { Language } from '../words/language.js';
import { answeredAt, type ActionRunner } from './action-runner.js';
import { enumChoices, enumQuestionText, tappedOption, typedOption, unsettledEnum } from './enum-question.js';
import type { ChoicePending } from './pending-question.js';
import { LANGUAGE_PROPERTY, languagePropertyOf } from './write-language.js';
import { wordsFor } from './words.js';

export interface ChoiceStepsOptions {
  logger: Logger;
  metrics: Metrics;
  now: () => number;
  confirmTtlSeconds: number;
  refuse: ActionRunner['refuse'];
  /** The call going on once the argument is filled (the confirmation follows). */
  propose: (write: McpWriteTool, raw: unknown, context: ToolCallContext) => Promise<unknown>;
}

export function createChoiceSteps(options: ChoiceStepsOptions) {
  const { logger, metrics, now, refuse } = options;

  /**
   * Asks the customer for an enum argument the model left out or got wrong: nothing is proposed
   * yet; the partly frozen call waits in the pending question's data.
   */
  const askChoice = (write: McpWriteTool, args: Record<string, unknown>, context: ToolCallContext, language: Language) => {
    const unsettled = unsettledEnum(write.inputSchema.jsonSchema, args, Object.keys(write.access.arguments));
    if (!unsettled || context.caller.kind !== 'contact') return undefined;
    const id = randomUUID();
    const rest = Object.fromEntries(Object.entries(args).filter(([name]) => name !== unsettled.name));
    const choices = enumChoices(id, unsettled.options);
    const choice: ChoicePending = {
      id,
      argument: unsettled.name,
      options: unsettled.options,
      args: rest,
      language,
      askedBy: {
        address: context.customer.address,
        ...(context.caller.customerId ? { customerId: context.caller.customerId } : {}),
        ...(context.caller.entity ? { entityId: context.caller.entity.id } : {}),
      },
      expiresAt: new Date(now() + options.confirmTtlSeconds * 1000).toISOString(),
    };
    metrics.increment('action_choices_total', { tool: write.name, outcome: 'asked' });
    logger.info('action-choice-asked', { questionId: id, tool: write.name, argument: unsettled.name, channelId: context.channelId });
    return new ToolInterrupt(enumQuestionText({ action: write.title, argument: unsettled.title, choices, language }), { choice }, choices, undefined, language);
  };

  /**
   * The customer's answer to an enum question: a tap on one of its options or a typed number or
   * name fills the argument and the call goes on as the model's would have (the confirmation
   * follows); a tap on anything else is refused; any other message drops the question (a new turn).
   */
  const resumeChoice = async (write: McpWriteTool, pending: ChoicePending, answerText: string, context: ToolCallContext): Promise<ResumeOutcome> => {
    const words = wordsFor(pending.language);
    const asked = { _id: pending.id, tool: write.name };
    const tap = context.metadata.choice;
    const option = tap !== undefined ? tappedOption(tap, pending.id, pending.options) : typedOption(answerText, pending.options);
    if (option === 'foreign') {
      refuse('foreign-choice', asked, context, tap?.slice(0, 100));
      return { reply: words.refused };
    }
    const caller = context.caller;
    const same =
      caller.kind === 'contact' &&
      context.customer.address === pending.askedBy.address &&
      caller.customerId === pending.askedBy.customerId &&
      caller.entity?.id === pending.askedBy.entityId;
    if (!same) {
      refuse('not-proposer', asked, context);
      return { reply: words.refused };
    }
    if (!option) {
      metrics.increment('action_choices_total', { tool: write.name, outcome: 'dropped' });
      return { fresh: true };
    }
    if (answeredAt(context, now) > Date.parse(pending.expiresAt)) {
      metrics.increment('action_choices_total', { tool: write.name, outcome: 'expired' });
      return { reply: words.expired };
    }
    metrics.increment('action_choices_total', { tool: write.name, outcome: 'answered' });
    // Scoped arguments are bound again from the verified caller (the same one, checked above).
    const scoped = Object.keys(write.access.arguments);
    const filled = Object.fromEntries(Object.entries(pending.args).filter(([name]) => !scoped.includes(name)));
    filled[pending.argument] = option.value;
    if (languagePropertyOf(write)) filled[LANGUAGE_PROPERTY] = pending.language;
    try {
      const next = await options.propose(write, filled, context);
      return next instanceof ToolInterrupt ? { askAgain: next } : { output: next };
    } catch (error) {
      if (!(error instanceof ToolScopeError)) throw error;
      refuse('not-proposer', asked, context, error.reason);
      return { reply: words.refused };
    }
  };

  return { askChoice, resumeChoice };
}
