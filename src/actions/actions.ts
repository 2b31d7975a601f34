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
import { errorText } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { McpToolCallError, type McpToolSource, type McpWriteTool } from '../tools/mcp-tool-source.js';
import { bindArguments, ToolScopeError } from '../tools/scope.js';
import { ToolInterrupt, type AssistantTool, type Caller, type ResumeOutcome, type ToolCallContext } from '../contracts/tool.js';
import type { ActionRecord, ActionState, ActionStore } from './action-store.js';
import { confirmationChoices, confirmationText, renderSummary } from './summary.js';

const ACTION_EXPIRED_REPLY = 'That confirmation has expired, so nothing was changed. Tell me if you would still like to do it.';
const ACTION_REFUSED_REPLY = "That confirmation isn't valid for this request, so nothing was changed.";

/** Why a confirmation got nowhere (`action_refusals_total{reason}`). */
type RefusalReason = 'foreign-choice' | 'not-proposer' | 'missing';

const PendingSchema = z.object({ actionId: z.string().min(1) });
/** How long a change handed to the team waits for a teammate to run or decline it. */
const TEAM_CONFIRM_SECONDS = 24 * 60 * 60;
const InputSchema = z.record(z.string(), z.unknown());

const CONFIRM_WORDS = new Set(['1', 'yes', 'y', 'confirm', 'confirmed', 'ok', 'okay', 'sure', 'yes please', 'si', 'sí', 'go ahead', 'do it']);
const CANCEL_WORDS = new Set(['2', 'no', 'n', 'cancel', 'stop', 'no thanks', 'nope', "don't"]);

type Answer = 'confirm' | 'cancel' | 'other' | 'foreign-choice';

function readAnswer(text: string, choice: string | undefined, actionId: string): Answer {
  if (choice !== undefined) {
    const tapped = /^act:(.+):(confirm|cancel)$/.exec(choice);
    if (!tapped || tapped[1] !== actionId) return 'foreign-choice';
    return tapped[2] === 'confirm' ? 'confirm' : 'cancel';
  }
  const words = text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}' ]+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  if (CONFIRM_WORDS.has(words)) return 'confirm';
  if (CANCEL_WORDS.has(words)) return 'cancel';
  return 'other';
}

export interface ActionsOptions {
  store: ActionStore;
  source: Pick<McpToolSource, 'writeTools' | 'callWrite'>;
  /** How long a proposed action waits for its confirmation (ACTION_CONFIRM_TTL_SECONDS). */
  confirmTtlSeconds: number;
  /** Irreversible writes the business lets customers confirm themselves (ACTION_TOOLS_IRREVERSIBLE). */
  irreversibleOptIn: ReadonlySet<string>;
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
    decision: { run: boolean; by: string },
  ): Promise<{ outcome: 'unknown' | 'not-for-team' } | { outcome: 'decided'; action: ActionRecord }>;
}

const sameCaller = (record: ActionRecord, context: ToolCallContext): boolean =>
  context.caller.kind === 'contact' &&
  context.customer.address === record.proposedBy.address &&
  context.caller.customerId === record.proposedBy.customerId &&
  record.conversationId === context.conversationId;

export function createActions(options: ActionsOptions): Actions {
  const { store, source, metrics } = options;
  const logger = options.logger.child({ component: 'actions' });
  const now = options.now ?? Date.now;
  const iso = () => new Date(now()).toISOString();
  const count = (tool: string, outcome: string) => metrics.increment('actions_total', { tool, outcome });

  const refuse = (reason: RefusalReason, record: Pick<ActionRecord, '_id' | 'tool'> | undefined, context: ToolCallContext, detail?: string) => {
    metrics.increment('action_refusals_total', { reason, channel: context.channelId });
    logger.warn('action-refused', { reason, actionId: record?._id, tool: record?.tool, channelId: context.channelId, ...(detail ? { detail } : {}) });
  };

  /** Moves `record` to `state` (from one of `from`); the stored record either way. */
  const tryMove = async (record: ActionRecord, from: readonly ActionState[], state: ActionState, patch: Partial<ActionRecord> = {}) => {
    const next: ActionRecord = { ...record, ...patch, state, updatedAt: iso() };
    const moved = await store.transition(record.conversationId, from, next);
    if (!moved.moved) return undefined;
    if (['done', 'failed', 'cancelled', 'expired'].includes(state)) count(record.tool, state);
    logger.info('action-step', { actionId: record._id, tool: record.tool, state, ...(patch.reason ? { reason: patch.reason } : {}) });
    return next;
  };
  const move = async (record: ActionRecord, from: readonly ActionState[], state: ActionState, patch: Partial<ActionRecord> = {}) =>
    (await tryMove(record, from, state, patch)) ?? (await store.get(record.conversationId, record._id));

  const outcomeOf = (record: ActionRecord): ResumeOutcome => {
    if (record.state === 'done') return { output: { status: 'done', action: record.title, result: record.result } };
    if (record.state === 'failed') {
      return { output: { status: 'failed', action: record.title, error: record.error, note: 'It did not happen: tell the customer plainly why.' } };
    }
    if (record.state === 'expired') return { reply: ACTION_EXPIRED_REPLY };
    return { output: { status: 'cancelled', action: record.title, note: 'Nothing was changed.' } };
  };

  /** Runs a confirmed (or lost-outcome `running`) action once; throws when its outcome is unknown (the turn is retried and resolves it). */
  const run = async (record: ActionRecord, write: McpWriteTool | undefined, context: ToolCallContext): Promise<ActionRecord | undefined> => {
    const resolving = record.state === 'running';
    const running = await tryMove(record, [record.state], 'running', { calls: record.calls + 1 });
    // Another attempt moved it first (it runs it, or has): this one reports what is stored.
    if (!running) return store.get(record.conversationId, record._id);
    if (resolving) logger.warn('action-outcome-resolving', { actionId: record._id, tool: record.tool, calls: running.calls });
    if (!write) {
      return move(running, ['running'], 'failed', { error: 'This action is no longer available on the business system.' });
    }
    try {
      const result = await source.callWrite(record.tool, record.args, { caller: context.caller, idempotencyKey: record._id, signal: context.signal });
      return await move(running, ['running'], 'done', { result });
    } catch (error) {
      // Refused or answered with an error: it did not happen. A lost answer may have: retried with the same key.
      if (error instanceof McpToolCallError && (error.reason === 'tool-error' || error.reason === 'not-admitted' || error.reason === 'invalid-input')) {
        return move(running, ['running'], 'failed', { error: errorText(error).slice(0, 500) });
      }
      logger.warn('action-outcome-unknown', { actionId: record._id, tool: record.tool, error });
      throw error;
    }
  };

  const toTool = (write: McpWriteTool): AssistantTool => ({
    name: write.name,
    description: `${write.description} Calling it does not do it yet: the customer is shown exactly what will happen and asked to confirm.`,
    origin: 'mcp',
    category: write.category,
    effect: write.effect,
    access: write.access,
    inputSchema: write.inputSchema,

    async execute(raw, context) {
      const input = InputSchema.parse(raw ?? {});
      const caller: Caller = context.caller;
      if (caller.kind !== 'contact') throw new ToolScopeError(write.name, 'no-identity', `${write.name} needs a verified customer; it was not proposed.`);
      // The frozen arguments: scoped ones from the verified caller (a foreign value is refused, counted by the caller of execute).
      const args = bindArguments(write.name, write.access, write.declared, input, caller);
      // An irreversible write the business has not opted in: proposed to the team, never to the customer.
      const forTeam = write.effect === 'irreversible' && !options.irreversibleOptIn.has(write.name);
      const _id = randomUUID();
      const summary = renderSummary({
        title: write.title,
        args,
        scoped: Object.keys(write.access.arguments),
        jsonSchema: write.inputSchema.jsonSchema,
        caller,
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
        createdAt,
        expiresAt: new Date(now() + (forTeam ? TEAM_CONFIRM_SECONDS : options.confirmTtlSeconds) * 1000).toISOString(),
        updatedAt: createdAt,
      };
      await store.create(context.conversationId, record);
      count(write.name, forTeam ? 'handed_off' : 'proposed');
      if (forTeam) {
        logger.info('action-handed-off', { actionId: _id, tool: write.name, channelId: context.channelId });
        return {
          status: 'waiting for our team',
          change: summary.replace(/^Please confirm: /, ''),
          note: 'Nothing has happened yet: a person on our team must approve this change. Tell the customer so, and hand the conversation to the team.',
        };
      }
      logger.info('action-proposed', { actionId: _id, tool: write.name, channelId: context.channelId, roleId: context.roleId });
      const choices = confirmationChoices(_id);
      return new ToolInterrupt(confirmationText(summary, choices), { actionId: _id }, choices, Date.parse(record.expiresAt));
    },

    async resume(answerText, data, context) {
      const { actionId } = PendingSchema.parse(data);
      const record = await store.get(context.conversationId, actionId);
      const answer = readAnswer(answerText, context.metadata.choice, actionId);
      if (!record) {
        refuse('missing', undefined, context);
        return answer === 'other' ? { fresh: true } : { reply: ACTION_EXPIRED_REPLY };
      }
      if (answer === 'foreign-choice') {
        refuse('foreign-choice', record, context, context.metadata.choice?.slice(0, 100));
        await move(record, ['proposed'], 'cancelled', { reason: 'foreign-choice' });
        return { reply: ACTION_REFUSED_REPLY };
      }
      if (record.confirmer === 'teammate' || !sameCaller(record, context)) {
        refuse('not-proposer', record, context);
        await move(record, ['proposed'], 'cancelled', { reason: 'not-proposer' });
        return { reply: ACTION_REFUSED_REPLY };
      }
      if (record.state === 'proposed' && now() > Date.parse(record.expiresAt)) {
        const expired = await move(record, ['proposed'], 'expired', { reason: 'no answer in time' });
        if (answer === 'other') return { fresh: true };
        return expired ? outcomeOf(expired) : { reply: ACTION_EXPIRED_REPLY };
      }
      if (record.state === 'proposed' && answer !== 'confirm') {
        const ended = await move(record, ['proposed'], 'cancelled', { reason: answer === 'cancel' ? 'declined' : 'superseded' });
        if (answer === 'other') return { fresh: true };
        return ended ? outcomeOf(ended) : { reply: ACTION_EXPIRED_REPLY };
      }
      let current: ActionRecord | undefined = record;
      if (current.state === 'proposed') {
        current = await move(current, ['proposed'], 'confirmed', { confirmedBy: { address: context.customer.address, via: 'customer' } });
      }
      if (current && (current.state === 'confirmed' || current.state === 'running')) {
        const tool = source.writeTools().find((candidate) => candidate.name === current?.tool);
        current = await run(current, tool, context);
      }
      return current ? outcomeOf(current) : { reply: ACTION_EXPIRED_REPLY };
    },
  });

  /**
   * A teammate runs or declines a change handed to the team, once (the same compare-and-set
   * steps as a customer's confirmation). The caller it runs for is the one who proposed it.
   */
  const decide = async (
    conversationKey: string,
    actionId: string,
    decision: { run: boolean; by: string },
  ): Promise<{ outcome: 'unknown' | 'not-for-team' } | { outcome: 'decided'; action: ActionRecord }> => {
    const record = await store.get(conversationKey, actionId);
    if (!record) return { outcome: 'unknown' };
    if (record.confirmer !== 'teammate') return { outcome: 'not-for-team' };
    let current: ActionRecord | undefined = record;
    if (current.state === 'proposed' && now() > Date.parse(current.expiresAt))
      current = await move(current, ['proposed'], 'expired', { reason: 'no decision in time' });
    else if (current.state === 'proposed' && !decision.run) current = await move(current, ['proposed'], 'cancelled', { reason: `declined by ${decision.by}` });
    else if (current.state === 'proposed') {
      current = await move(current, ['proposed'], 'confirmed', { confirmedBy: { address: decision.by, via: 'teammate', name: decision.by } });
    }
    if (current && (current.state === 'confirmed' || current.state === 'running')) {
      const caller: Caller = {
        kind: 'contact',
        name: current.proposedBy.address,
        ...(current.proposedBy.customerId ? { customerId: current.proposedBy.customerId } : {}),
        entities: current.proposedBy.entityId ? [{ id: current.proposedBy.entityId, name: current.proposedBy.entityId }] : [],
        ...(current.proposedBy.entityId ? { entity: { id: current.proposedBy.entityId, name: current.proposedBy.entityId } } : {}),
      };
      const tool = source.writeTools().find((candidate) => candidate.name === current?.tool);
      const context = { caller, signal: new AbortController().signal } as Pick<ToolCallContext, 'caller' | 'signal'> as ToolCallContext;
      current = await run(current, tool, context);
    }
    return current ? { outcome: 'decided', action: current } : { outcome: 'unknown' };
  };

  let built: { from: readonly McpWriteTool[]; tools: readonly AssistantTool[] } | undefined;
  return {
    decide,
    tools() {
      const writes = source.writeTools();
      if (built?.from !== writes) built = { from: writes, tools: Object.freeze(writes.map(toTool)) };
      return built.tools;
    },
  };
}
