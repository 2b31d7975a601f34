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
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { McpWriteTool } from '../tools/mcp-tool-source.js';
import type { AssistantTool, ResumeOutcome, ToolCallContext } from '../contracts/tool.js';
import type { ActionStore } from './action-store.js';
import { createActionRunner, type ActionRunner, type ActionRunnerOptions } from './action-runner.js';
import { createChoiceSteps } from './choice-steps.js';
import { PendingSchema } from './pending-question.js';
import { createProposer, type HandToTeam } from './propose.js';
import { createTeamDecision, type TeamDecision } from './team-decision.js';
import { offeredSchema } from './write-language.js';
import { wordsFor } from './words.js';

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
  handToTeam?: HandToTeam;
  logger: Logger;
  metrics: Metrics;
  now?: () => number;
}

export interface Actions {
  /** The writes as tools a turn may offer (filtered by the caller and the role like any tool). */
  tools(): readonly AssistantTool[];
  /** A teammate runs (`run`) or declines a change handed to the team; each happens once. */
  decide(conversationKey: string, actionId: string, decision: { run: boolean; by: string; name?: string }): Promise<TeamDecision>;
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
  const count = (tool: string, outcome: string) => metrics.increment('actions_total', { tool, outcome });

  const runner = createActionRunner({ store, source, logger, metrics, now });
  /** The run each proposal was made in (one change at a time per model turn), for a few minutes. */
  const proposedIn = new Map<string, number>();
  const firstProposalOf = (runId: string): boolean => {
    const at = now();
    for (const [id, when] of proposedIn) if (at - when > 10 * 60_000) proposedIn.delete(id);
    if (proposedIn.has(runId)) return false;
    proposedIn.set(runId, at);
    return true;
  };

  const { askChoice, resumeChoice } = createChoiceSteps({
    logger,
    metrics,
    now,
    confirmTtlSeconds: options.confirmTtlSeconds,
    refuse: runner.refuse,
    propose: (write, raw, context) => propose(write, raw, context),
  });
  const propose = createProposer({
    store,
    logger,
    now,
    count,
    askChoice,
    confirmTtlSeconds: options.confirmTtlSeconds,
    irreversibleOptIn: options.irreversibleOptIn,
    ...(options.teamApproval ? { teamApproval: options.teamApproval } : {}),
    ...(options.handToTeam ? { handToTeam: options.handToTeam } : {}),
  });

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
    decide: createTeamDecision({ store, runner, now }),
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
