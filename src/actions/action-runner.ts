/**
 * The steps of a confirmed action after it was proposed: compare-and-set moves on its state,
 * the one run through the MCP server's write path, and the customer's answer to its
 * confirmation (a tap or typed words) — shared by the customer's path, the team's and the
 * sweeper that ends actions nobody came back to.
 *
 * Must never call a write twice at once or without its own idempotency key: a `running` action
 * is taken over only after its lease (one caller at a time, by compare-and-set on its stamp),
 * and an outcome that is not known yet (the business system unreachable, an answer lost) is an
 * `ActionOutcomePendingError` — the turn is retried and resolves it — never a failure.
 */
import { AppError, errorText } from '../errors/index.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { McpToolCallError, type McpToolSource } from '../tools/mcp-tool-source.js';
import type { ResumeOutcome, ToolCallContext } from '../contracts/tool.js';
import { languageOf, type Language } from '../words/language.js';
import type { ActionRecord, ActionState, ActionStore } from './action-store.js';
import { CANCEL_WORDS, clockOf, CONFIRM_WORDS, fillWords, normaliseAnswer, outcomeText, wordsFor } from './words.js';

/** An action's outcome is not known yet: retried (as an outage is), never reported as failed. */
export class ActionOutcomePendingError extends AppError {}

/**
 * How long a run is taken to be in progress before another caller may resolve its outcome: the
 * MCP call's timeout (15 s) and a second, so the server is done with the first call (or never
 * will be). Only the server's answer ends it sooner: a client that gave up (an abort, a timeout,
 * a lost connection or conversation lock) or died leaves it held to its end, since the server
 * may still be applying the change.
 */
export const RUN_LEASE_MS = 16_000;

/**
 * How long after a confirmation's time is up an answer that arrived in time may still be on its
 * way to its turn (a burst's quiet period, at most 10 s; a customer typing, at most 30 s; the
 * conversation's turn before it): the sweeper records it `expired` only after this too.
 */
export const ANSWER_GRACE_MS = 60_000;

/** When the customer's answer arrived: the message's receive time, else now. */
export const answeredAt = (context: Pick<ToolCallContext, 'receivedAt'>, now: () => number): number => context.receivedAt ?? now();

/** Until when a `running` action's attempt holds it (records from before leases: its last step plus the lease). */
export const leaseEnd = (record: ActionRecord): number => (record.leaseUntil ? Date.parse(record.leaseUntil) : Date.parse(record.updatedAt) + RUN_LEASE_MS);

/** Why a confirmation got nowhere (`action_refusals_total{reason}`). */
export type RefusalReason = 'foreign-choice' | 'not-proposer' | 'missing' | 'stale';

type Answer = 'confirm' | 'cancel' | 'other' | 'foreign-choice';

const TAP = /^act:(.+):(confirm|cancel)$/;

function readAnswer(text: string, choice: string | undefined, actionId: string): Answer {
  if (choice !== undefined) {
    const tapped = TAP.exec(choice);
    if (!tapped || tapped[1] !== actionId) return 'foreign-choice';
    return tapped[2] === 'confirm' ? 'confirm' : 'cancel';
  }
  const words = normaliseAnswer(text);
  if (CONFIRM_WORDS.has(words)) return 'confirm';
  if (CANCEL_WORDS.has(words)) return 'cancel';
  return 'other';
}

const ENDED: readonly ActionState[] = ['done', 'failed', 'cancelled', 'expired'];

const sameCaller = (record: ActionRecord, context: ToolCallContext): boolean =>
  context.caller.kind === 'contact' &&
  context.customer.address === record.proposedBy.address &&
  context.caller.customerId === record.proposedBy.customerId &&
  record.conversationId === context.conversationId;

const pending = (record: ActionRecord, why: string, cause?: unknown) =>
  new ActionOutcomePendingError(`${record.tool} (action ${record._id}): ${why}`, cause === undefined ? undefined : { cause });

/** What the customer's answer resumes with, once the action ended: the model continues from it, or the service's words say it. */
const outcomeOf = (record: ActionRecord, language: Language): ResumeOutcome => {
  const said = outcomeText(record, language);
  if (record.state === 'expired') return { reply: wordsFor(language).expired };
  if (record.state === 'done')
    return { output: { status: 'done', action: record.title, result: record.result, doneAt: record.updatedAt }, ...(said ? { said } : {}) };
  if (record.state === 'failed') {
    return {
      output: { status: 'failed', action: record.title, error: record.error, note: 'It did not happen: tell the customer plainly why.' },
      ...(said ? { said } : {}),
    };
  }
  if (record.state === 'cancelled') return { output: { status: 'cancelled', action: record.title, note: 'Nothing was changed.' }, ...(said ? { said } : {}) };
  throw pending(record, `still ${record.state}`);
};

export interface ActionRunnerOptions {
  store: ActionStore;
  source: Pick<McpToolSource, 'writeTools' | 'callWrite'> & { connected?: () => boolean };
  logger: Logger;
  metrics: Metrics;
  now: () => number;
}

/** The moves on an action's state the steps below share (`createActionRunner`'s). */
interface Moves {
  tryMove(
    record: ActionRecord,
    from: readonly ActionState[],
    state: ActionState,
    patch?: Partial<ActionRecord>,
    stamp?: string,
  ): Promise<ActionRecord | undefined>;
  move(record: ActionRecord, from: readonly ActionState[], state: ActionState, patch?: Partial<ActionRecord>): Promise<ActionRecord | undefined>;
}

/**
 * The one write call of an action moved to `running` under its lease, with its own idempotency
 * key: `done` with the result, `failed` when the server refused it, else (the outcome unknown)
 * `ActionOutcomePendingError`, the lease released at once when no call can still be in flight.
 */
async function callOnce(
  options: ActionRunnerOptions,
  { tryMove, move }: Moves,
  record: ActionRecord,
  running: ActionRecord,
  context: Pick<ToolCallContext, 'caller' | 'signal'>,
): Promise<ActionRecord | undefined> {
  const { source, logger, now } = options;
  let answered = false;
  try {
    const result = await source.callWrite(record.tool, record.args, { caller: context.caller, idempotencyKey: record._id, signal: context.signal });
    answered = true;
    return await move(running, ['running'], 'done', { result });
  } catch (error) {
    // Refused or answered with an error: it did not happen. A lost answer may have: retried with the same key
    // (as is a refusal that only says the server is not connected right now).
    const refused = error instanceof McpToolCallError && ['tool-error', 'not-admitted', 'invalid-input'].includes(error.reason);
    if (refused && source.connected?.() !== false) {
      return move(running, ['running'], 'failed', { error: errorText(error).slice(0, 500) });
    }
    // The server answered (or never got the call): no call is in flight, the next attempt resolves it at once.
    const over = answered || (error instanceof McpToolCallError && error.reason !== 'call-failed');
    logger.warn('action-outcome-unknown', { actionId: record._id, tool: record.tool, held: !over, error });
    // Otherwise the client gave up while the server may still work on it: the lease holds to its end.
    if (over) await tryMove(running, ['running'], 'running', { leaseUntil: new Date(now()).toISOString() }, running.updatedAt).catch(() => undefined);
    throw pending(record, 'its outcome is not known yet', error);
  }
}

/**
 * An answer refused before it decides anything: the tap is another action's, or the answer is
 * not the proposer's (a proposal then ends cancelled). Undefined when it is the proposer's
 * answer to this action.
 */
async function refusedAnswer(
  record: ActionRecord,
  answer: Answer,
  context: ToolCallContext,
  words: ReturnType<typeof wordsFor>,
  steps: { refuse: (reason: RefusalReason, record: ActionRecord | undefined, context: ToolCallContext, detail?: string) => void; move: Moves['move'] },
): Promise<ResumeOutcome | undefined> {
  if (answer === 'foreign-choice') {
    steps.refuse('foreign-choice', record, context, context.metadata.choice?.slice(0, 100));
    await steps.move(record, ['proposed'], 'cancelled', { reason: 'foreign-choice' });
    return { reply: words.refused };
  }
  if (record.confirmer === 'teammate' || !sameCaller(record, context)) {
    steps.refuse('not-proposer', record, context);
    await steps.move(record, ['proposed'], 'cancelled', { reason: 'not-proposer' });
    return { reply: words.refused };
  }
  return undefined;
}

export type ActionRunner = ReturnType<typeof createActionRunner>;

export function createActionRunner(options: ActionRunnerOptions) {
  const { store, source, logger, metrics, now } = options;
  const iso = () => new Date(now()).toISOString();
  const count = (tool: string, outcome: string) => metrics.increment('actions_total', { tool, outcome });
  const later = (step: Promise<void>) => step.catch((error: unknown) => logger.warn('action-due-unrecorded', { error }));

  const refuse = (reason: RefusalReason, record: Pick<ActionRecord, '_id' | 'tool'> | undefined, context: ToolCallContext, detail?: string) => {
    metrics.increment('action_refusals_total', { reason, channel: context.channelId });
    logger.warn('action-refused', { reason, actionId: record?._id, tool: record?.tool, channelId: context.channelId, ...(detail ? { detail } : {}) });
  };

  /** Moves `record` to `state` (from one of `from`; with `stamp`, only if not moved since); the record moved, or undefined. */
  const tryMove = async (record: ActionRecord, from: readonly ActionState[], state: ActionState, patch: Partial<ActionRecord> = {}, stamp?: string) => {
    const next: ActionRecord = { ...record, ...patch, state, updatedAt: iso() };
    const moved = await store.transition(record.conversationId, from, next, stamp);
    if (!moved.moved) return undefined;
    if (ENDED.includes(state)) {
      count(record.tool, state);
      await later(store.undue(record.conversationId, record._id));
    }
    logger.info('action-step', { actionId: record._id, tool: record.tool, state, ...(patch.reason ? { reason: patch.reason } : {}) });
    return next;
  };
  const move = async (record: ActionRecord, from: readonly ActionState[], state: ActionState, patch: Partial<ActionRecord> = {}) =>
    (await tryMove(record, from, state, patch)) ?? (await store.get(record.conversationId, record._id));

  /**
   * Runs a confirmed action (or resolves a `running` one whose lease ran out) once, with its own
   * key; the record as it ended. Throws `ActionOutcomePendingError` while the outcome is unknown.
   */
  const run = async (
    record: ActionRecord,
    context: Pick<ToolCallContext, 'caller' | 'signal'>,
    /** `report`: an attempt in progress elsewhere is returned as it stands (the team's page), not thrown. */
    whileRunning: 'throw' | 'report' = 'throw',
  ): Promise<ActionRecord | undefined> => {
    const write = source.writeTools().find((candidate) => candidate.name === record.tool);
    // Not listed because the business system is unreachable: resolved once it answers, never failed for it.
    if (!write && (record.state === 'running' || source.connected?.() === false)) throw pending(record, 'the business system is not reachable');
    const resolving = record.state === 'running';
    if (resolving && now() < leaseEnd(record)) throw pending(record, 'another attempt is running it');
    const running = await tryMove(
      record,
      [record.state],
      'running',
      { calls: record.calls + (write ? 1 : 0), leaseUntil: new Date(now() + RUN_LEASE_MS).toISOString() },
      resolving ? record.updatedAt : undefined,
    );
    if (!running) {
      // Another attempt moved it first: it runs it (its outcome is awaited), or has.
      const stored = await store.get(record.conversationId, record._id);
      if (stored && !ENDED.includes(stored.state) && whileRunning === 'throw') throw pending(stored, 'another attempt is running it');
      return stored;
    }
    if (resolving) logger.warn('action-outcome-resolving', { actionId: record._id, tool: record.tool, calls: running.calls });
    if (!write) return move(running, ['running'], 'failed', { error: 'This action is no longer available on the business system.' });
    // Due again once its lease is over: a run nobody comes back to is resolved by the sweeper.
    await later(store.due(record.conversationId, record._id, now() + 2 * RUN_LEASE_MS));
    return callOnce(options, { tryMove, move }, record, running, context);
  };

  /**
   * The customer's answer to a confirmation: confirm runs it once, cancel ends it, anything else
   * ends it and is a new turn. Idempotent: the same answer again (a retried batch) finds the
   * action where the first left it and answers with its outcome, never runs it again.
   */
  const resumeConfirmation = async (actionId: string, language: Language, answerText: string, context: ToolCallContext): Promise<ResumeOutcome> => {
    const words = wordsFor(language);
    const record = await store.get(context.conversationId, actionId);
    const answer = readAnswer(answerText, context.metadata.choice, actionId);
    if (!record) {
      refuse('missing', undefined, context);
      return answer === 'other' ? { fresh: true } : { reply: words.expired };
    }
    const refused = await refusedAnswer(record, answer, context, words, { refuse, move });
    if (refused) return refused;
    // In time by when the answer arrived, not when its turn runs (held while the customer typed, say).
    if (record.state === 'proposed' && answeredAt(context, now) > Date.parse(record.expiresAt)) {
      const expired = await move(record, ['proposed'], 'expired', { reason: 'no answer in time' });
      if (answer === 'other') return { fresh: true };
      return expired ? outcomeOf(expired, language) : { reply: words.expired };
    }
    if (record.state === 'proposed' && answer !== 'confirm') {
      const ended = await move(record, ['proposed'], 'cancelled', { reason: answer === 'cancel' ? 'declined' : 'superseded' });
      if (answer === 'other') return { fresh: true };
      return ended ? outcomeOf(ended, language) : { reply: words.expired };
    }
    // Ended without running (expired on time, cancelled): another message is a new turn, as before it ended.
    if (answer === 'other' && (record.state === 'expired' || record.state === 'cancelled')) return { fresh: true };
    let current: ActionRecord | undefined = record;
    if (current.state === 'proposed') {
      current = await move(current, ['proposed'], 'confirmed', { confirmedBy: { address: context.customer.address, via: 'customer' } });
    }
    if (current && (current.state === 'confirmed' || current.state === 'running')) current = await run(current, context);
    return current ? outcomeOf(current, language) : { reply: words.expired };
  };

  /**
   * A tap on a confirmation when no question is pending in the conversation (an old message's
   * button, another conversation's, a forged one): refused in the service's words, never read
   * by the model as the word "Confirm". Undefined when the tap is no action's.
   */
  const staleTap = async (choice: string, context: ToolCallContext): Promise<string | undefined> => {
    const tapped = TAP.exec(choice);
    if (!tapped?.[1]) return undefined;
    const record = await store.get(context.conversationId, tapped[1]);
    const language = languageOf(record?.language, context.metadata.language);
    refuse('stale', record ?? { _id: tapped[1].slice(0, 100), tool: 'unknown' }, context);
    if (!record || !sameCaller(record, context)) return wordsFor(language).refused;
    if (record.state === 'done') return fillWords(wordsFor(language).tappedDone, { action: record.title, time: clockOf(record.updatedAt) });
    return (record.state === 'failed' ? outcomeText(record, language) : undefined) ?? wordsFor(language).expired;
  };

  return { tryMove, move, run, outcomeOf, refuse, resumeConfirmation, staleTap };
}

/** The caller a change runs for outside the customer's turn (a teammate's decision, the sweeper): the one who proposed it. */
export function proposerContext(record: ActionRecord): Pick<ToolCallContext, 'caller' | 'signal'> {
  const { address, customerId, entityId } = record.proposedBy;
  const entity = entityId ? { id: entityId, name: entityId } : undefined;
  return {
    caller: { kind: 'contact', name: address, ...(customerId ? { customerId } : {}), entities: entity ? [entity] : [], ...(entity ? { entity } : {}) },
    signal: new AbortController().signal,
  };
}
