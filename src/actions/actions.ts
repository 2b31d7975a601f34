/**
 * Confirmed actions: the MCP server's writes, offered to a role whose scope admits their effect,
 * as tools that never run when the model calls them. A call freezes its arguments (scoped ones
 * bound to the verified caller, the entity from the session), stores a `proposed` action and
 * asks the customer to confirm with a summary the service renders — a pending question like any
 * channel tool's (seed step 6): the customer's answer resumes it without re-judging. Confirm runs
 * the write once through the MCP source's write path with the action id as idempotency key;
 * cancel, expiry or any other message ends it without running (another message is a new turn).
 *
 * Must never run a write the customer did not confirm, run one twice, or run it for anyone but
 * the caller who was asked: the confirmation is read from the customer's message or tap, checked
 * against the action it names and the caller who proposed it, and every step is a compare-and-set
 * on the action's state. A run whose outcome was lost (a crash, a timeout) is resolved by calling
 * again with the same idempotency key — the MCP server answers a repeated key with the first
 * outcome — never by a second, keyless call.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { McpWriteTool } from '../tools/mcp-tool-source.js';
import { bindArguments, ToolScopeError } from '../tools/scope.js';
import { ToolInterrupt, type AssistantTool, type Caller, type ResumeOutcome, type ToolCallContext } from '../contracts/tool.js';
import type { ActionRecord, ActionStore } from './action-store.js';
import { createActionRunner, leaseEnd, proposerContext, type ActionRunner, type ActionRunnerOptions } from './action-runner.js';
import { enumChoices, enumQuestionText, tappedOption, typedOption, unsettledEnum } from './enum-question.js';
import { confirmationChoices, confirmationText, renderSummary } from './summary.js';
import { languageOf, LANGUAGES, type Language } from '../words/language.js';
import { clockOf, fillWords, wordsFor } from './words.js';

const ConfirmationPendingSchema = z.object({ actionId: z.string().min(1), language: z.enum(LANGUAGES).optional() });
/** A question for one of the write's enum arguments, asked before anything is proposed: the partly frozen call it completes. */
const ChoicePendingSchema = z.object({
  choice: z.object({
    id: z.string().min(1),
    argument: z.string().min(1),
    options: z.array(z.object({ value: z.string(), label: z.string() })).min(1),
    /** The arguments so far (scoped ones bound to the verified caller who was asked). */
    args: z.record(z.string(), z.unknown()),
    language: z.enum(LANGUAGES),
    askedBy: z.object({ address: z.string(), customerId: z.string().optional(), entityId: z.string().optional() }),
    expiresAt: z.iso.datetime(),
  }),
});
const PendingSchema = z.union([ConfirmationPendingSchema, ChoicePendingSchema]);
type ChoicePending = z.infer<typeof ChoicePendingSchema>['choice'];
/** How long a change handed to the team waits for a teammate to run or decline it. */
const TEAM_CONFIRM_SECONDS = 24 * 60 * 60;
const InputSchema = z.record(z.string(), z.unknown());

/**
 * The property each write's schema gains as the model sees it: the language the customer writes
 * in (ISO 639-1), which the service's own words are rendered in. Taken off before the arguments
 * are frozen, never sent to the MCP server; a write declaring an argument of that name keeps its own.
 */
const LANGUAGE_PROPERTY = 'language';
const LANGUAGE_SCHEMA = {
  type: 'string',
  description: 'ISO 639-1 code of the language the customer writes in (e.g. "es"); the confirmation is shown in it.',
};

/** The language property a write's schema gains, unless it has an argument of that name (then its words follow the channel's locale). */
const languagePropertyOf = (write: McpWriteTool): string | undefined => {
  const properties = write.inputSchema.jsonSchema.properties;
  return typeof properties === 'object' && properties !== null && Object.hasOwn(properties, LANGUAGE_PROPERTY) ? undefined : LANGUAGE_PROPERTY;
};

/** The write's schema as offered to the model: the language property added (one object per write listing). */
const offeredSchemas = new WeakMap<McpWriteTool, { jsonSchema: Record<string, unknown> }>();
function offeredSchema(write: McpWriteTool): { jsonSchema: Record<string, unknown> } {
  let offered = offeredSchemas.get(write);
  if (!offered) {
    const properties = write.inputSchema.jsonSchema.properties;
    offered = languagePropertyOf(write)
      ? { jsonSchema: { ...write.inputSchema.jsonSchema, properties: { ...(properties as object | undefined), [LANGUAGE_PROPERTY]: LANGUAGE_SCHEMA } } }
      : write.inputSchema;
    offeredSchemas.set(write, offered);
  }
  return offered;
}

/** The model's arguments without the language property, and the language the service's words are in (the model's code, else the channel's locale, else English). */
function splitLanguage(write: McpWriteTool, raw: unknown, context: ToolCallContext): { input: Record<string, unknown>; language: Language } {
  const input = InputSchema.parse(raw ?? {});
  if (!languagePropertyOf(write)) return { input, language: languageOf(context.metadata.language) };
  const { [LANGUAGE_PROPERTY]: written, ...rest } = input;
  return { input: rest, language: languageOf(written, context.metadata.language) };
}

export interface ActionsOptions {
  store: ActionStore;
  /** The MCP server's writes; `connected` (when known) tells an unreachable server from a write it no longer lists. */
  source: ActionRunnerOptions['source'];
  /** How long a proposed action waits for its confirmation (ACTION_CONFIRM_TTL_SECONDS). */
  confirmTtlSeconds: number;
  /** Irreversible writes the business lets customers confirm themselves (ACTION_TOOLS_IRREVERSIBLE). */
  irreversibleOptIn: ReadonlySet<string>;
  /** Writes a teammate must approve whatever their effect (ACTION_TOOLS_TEAM_APPROVAL): never confirmed by the customer. */
  teamApproval?: ReadonlySet<string>;
  /**
   * Hands the conversation to the team for a change only a teammate may run (the channel's
   * hand-off, carrying the change); what the assistant should say next, or why it could not.
   */
  handToTeam?: (record: ActionRecord, context: ToolCallContext) => Promise<{ handedOff: true; nextSteps: string } | { handedOff: false; reason: string }>;
  logger: Logger;
  metrics: Metrics;
  now?: () => number;
}

export interface Actions {
  /** The writes as tools a turn may offer (filtered by the caller and the role like any tool). */
  tools(): readonly AssistantTool[];
  /** A teammate runs (`run`) or declines a change handed to the team; each happens once. */
  decide(
    conversationKey: string,
    actionId: string,
    decision: { run: boolean; by: string; name?: string },
  ): Promise<{ outcome: 'unknown' | 'not-for-team' } | { outcome: 'decided'; action: ActionRecord }>;
  /** The words for a confirmation tap that comes when no question is pending (undefined: not an action's tap). */
  staleTap(choice: string, context: ToolCallContext): Promise<string | undefined>;
  /** Resumes a pending question of a write that is not listed right now (the business system unreachable). */
  resumeUnlisted(data: unknown, answerText: string, context: ToolCallContext): Promise<ResumeOutcome | undefined>;
  /** The steps the sweeper takes on actions nobody came back to. */
  readonly runner: ActionRunner;
}

export function createActions(options: ActionsOptions): Actions {
  const { store, source, metrics } = options;
  const logger = options.logger.child({ component: 'actions' });
  const now = options.now ?? Date.now;
  const iso = () => new Date(now()).toISOString();
  const count = (tool: string, outcome: string) => metrics.increment('actions_total', { tool, outcome });

  const runner = createActionRunner({ store, source, logger, metrics, now });
  const { refuse, move, run } = runner;
  /** The run each proposal was made in (one change at a time per model turn), for a few minutes. */
  const proposedIn = new Map<string, number>();
  const firstProposalOf = (runId: string): boolean => {
    const at = now();
    for (const [id, when] of proposedIn) if (at - when > 10 * 60_000) proposedIn.delete(id);
    if (proposedIn.has(runId)) return false;
    proposedIn.set(runId, at);
    return true;
  };

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
    if (now() > Date.parse(pending.expiresAt)) {
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
      const next = await propose(write, filled, context);
      return next instanceof ToolInterrupt ? { askAgain: next } : { output: next };
    } catch (error) {
      if (!(error instanceof ToolScopeError)) throw error;
      refuse('not-proposer', asked, context, error.reason);
      return { reply: words.refused };
    }
  };

  const toTool = (write: McpWriteTool): AssistantTool => ({
    name: write.name,
    description: `${write.description} Calling it does not do it yet: the customer is shown exactly what will happen and asked to confirm.`,
    origin: 'mcp',
    category: write.category,
    effect: write.effect,
    access: write.access,
    inputSchema: offeredSchema(write),

    async execute(raw, context) {
      // One change at a time: a second write in the same model turn would wait where the customer can't see it.
      if (!firstProposalOf(context.runId)) {
        logger.info('action-second-refused', { tool: write.name, channelId: context.channelId });
        return {
          status: 'not proposed',
          note: 'Only one change can be proposed at a time, and another is already waiting for the customer. Propose this one after that one is answered.',
        };
      }
      return propose(write, raw, context);
    },

    async resume(answerText, data, context) {
      const pending = PendingSchema.parse(data);
      if ('choice' in pending) return resumeChoice(write, pending.choice, answerText, context);
      return runner.resumeConfirmation(pending.actionId, pending.language ?? 'en', answerText, context);
    },
  });

  /** Freezes a write's call and asks for what it still needs: an enum argument, the customer's confirmation, or the team's. */
  const propose = async (write: McpWriteTool, raw: unknown, context: ToolCallContext): Promise<unknown> => {
    const { input, language } = splitLanguage(write, raw, context);
    const caller: Caller = context.caller;
    if (caller.kind !== 'contact') throw new ToolScopeError(write.name, 'no-identity', `${write.name} needs a verified customer; it was not proposed.`);
    // The frozen arguments: scoped ones from the verified caller (a foreign value is refused, counted by the caller of execute).
    const args = bindArguments(write.name, write.access, write.declared, input, caller);
    const question = askChoice(write, args, context, language);
    if (question) return question;
    // An irreversible write the business has not opted in: proposed to the team, never to the customer.
    const forTeam = (write.effect === 'irreversible' && !options.irreversibleOptIn.has(write.name)) || options.teamApproval?.has(write.name) === true;
    const _id = randomUUID();
    const summary = renderSummary({
      title: write.title,
      args,
      scoped: Object.keys(write.access.arguments),
      jsonSchema: write.inputSchema.jsonSchema,
      caller,
      language: forTeam ? 'en' : language,
    });
    const createdAt = iso();
    const record: ActionRecord = {
      _id,
      conversationId: context.conversationId,
      channel: context.channelId,
      tool: write.name,
      title: write.title,
      effect: write.effect,
      args,
      summary,
      state: 'proposed',
      proposedBy: {
        address: context.customer.address,
        ...(caller.customerId ? { customerId: caller.customerId } : {}),
        ...(caller.entity ? { entityId: caller.entity.id } : {}),
        roleId: context.roleId,
        runId: context.runId,
      },
      calls: 0,
      ...(forTeam ? { confirmer: 'teammate' as const } : {}),
      ...(language !== 'en' ? { language } : {}),
      createdAt,
      expiresAt: new Date(now() + (forTeam ? TEAM_CONFIRM_SECONDS : options.confirmTtlSeconds) * 1000).toISOString(),
      updatedAt: createdAt,
    };
    // The same change done in the last day is asked about as such, never proposed silently as new.
    const [doneAt] = await Promise.all([forTeam ? undefined : store.doneBefore(context.conversationId, record), store.create(context.conversationId, record)]);
    await store.due(context.conversationId, _id, Date.parse(record.expiresAt)).catch((error: unknown) => logger.warn('action-due-unrecorded', { error }));
    count(write.name, forTeam ? 'handed_off' : 'proposed');
    if (forTeam) {
      logger.info('action-handed-off', { actionId: _id, tool: write.name, channelId: context.channelId });
      // The service hands it over itself (the notice and the transcript page carry the change); the model only tells the customer.
      const handed = options.handToTeam
        ? await options.handToTeam(record, context)
        : { handedOff: false as const, reason: 'Hand the conversation to the team.' };
      return {
        status: 'waiting for our team',
        change: summary.replace(/^Please confirm: /, ''),
        note: handed.handedOff
          ? `Nothing has happened yet: a person on our team must approve this change, and the conversation is with them now. Tell the customer so. ${handed.nextSteps}`
          : `Nothing has happened yet: a person on our team must approve this change. Tell the customer so. ${handed.reason}`,
      };
    }
    logger.info('action-proposed', {
      actionId: _id,
      tool: write.name,
      channelId: context.channelId,
      roleId: context.roleId,
      ...(doneAt ? { doneBefore: doneAt } : {}),
    });
    const choices = confirmationChoices(_id, language);
    const text = confirmationText(summary, choices, language);
    const asked = doneAt ? `${fillWords(wordsFor(language).alreadyDone, { time: clockOf(doneAt) })}\n\n${text}` : text;
    return new ToolInterrupt(asked, { actionId: _id, language }, choices, Date.parse(record.expiresAt), language);
  };

  /**
   * A teammate runs or declines a change handed to the team, once (the same compare-and-set
   * steps as a customer's confirmation). The caller it runs for is the one who proposed it.
   */
  const decide = async (
    conversationKey: string,
    actionId: string,
    decision: { run: boolean; by: string; name?: string },
  ): Promise<{ outcome: 'unknown' | 'not-for-team' } | { outcome: 'decided'; action: ActionRecord }> => {
    const name = decision.name ?? decision.by;
    const record = await store.get(conversationKey, actionId);
    if (!record) return { outcome: 'unknown' };
    if (record.confirmer !== 'teammate') return { outcome: 'not-for-team' };
    let current: ActionRecord | undefined = record;
    if (current.state === 'proposed' && now() > Date.parse(current.expiresAt))
      current = await move(current, ['proposed'], 'expired', { reason: 'no decision in time' });
    else if (current.state === 'proposed' && !decision.run) current = await move(current, ['proposed'], 'cancelled', { reason: `declined by ${name}` });
    else if (current.state === 'proposed') {
      current = await move(current, ['proposed'], 'confirmed', { confirmedBy: { address: decision.by, via: 'teammate', name } });
    }
    // Running for another click right now (no conversation lock serialises teammates): reported, never called again
    // until its outcome is surely lost (well past the MCP call's timeout).
    if (current?.state === 'running' && now() < leaseEnd(current)) return { outcome: 'decided', action: current };
    if (current && (current.state === 'confirmed' || current.state === 'running')) current = await run(current, proposerContext(current), 'report');
    return current ? { outcome: 'decided', action: current } : { outcome: 'unknown' };
  };

  /**
   * A confirmation answered when its write is not listed (the business system unreachable at
   * the moment): still resolved by the actions machinery, never handed to the model as words.
   */
  const resumeUnlisted = async (data: unknown, answerText: string, context: ToolCallContext): Promise<ResumeOutcome | undefined> => {
    const parsed = PendingSchema.safeParse(data);
    if (!parsed.success) return undefined;
    const pending = parsed.data;
    if ('choice' in pending) return { reply: wordsFor(pending.choice.language).expired };
    return runner.resumeConfirmation(pending.actionId, pending.language ?? 'en', answerText, context);
  };

  let built: { from: readonly McpWriteTool[]; tools: readonly AssistantTool[] } | undefined;
  return {
    decide,
    runner,
    resumeUnlisted,
    staleTap: runner.staleTap,
    tools() {
      const writes = source.writeTools();
      if (built?.from !== writes) built = { from: writes, tools: Object.freeze(writes.map(toTool)) };
      return built.tools;
    },
  };
}
