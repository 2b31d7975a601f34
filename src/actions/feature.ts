/**
 * Confirmed actions as a feature: the pending-action store in Redis, the MCP server's scoped
 * writes offered as tools that propose (never run) when ACTIONS_ENABLED, the sweeper, the records
 * in MongoDB, and what a team decides: a change only a teammate may run is handed to the team with
 * the customer's channel's own hand-off tool, and the customer hears the decision through their
 * conversation's hand-off, in the service's words.
 */
import type { Config } from '../config.js';
import type { AssistantTool, ToolCallContext } from '../contracts/tool.js';
import type { HandoffOutcome } from '../handoff/handoff-service.js';
import type { TeamId } from '../handoff/teams.js';
import type { Infrastructure } from '../infrastructure.js';
import { errorText } from '../errors/index.js';
import type { TranscriptOutbox } from '../store/outbox.js';
import type { McpToolSource } from '../tools/mcp-tool-source.js';
import { createActionRecords } from './action-records.js';
import { createActionStore } from './action-store.js';
import { createActionSweeper } from './action-sweeper.js';
import { createActions, type ActionsOptions } from './actions.js';
import { pageActions, type TellDecision } from './page-view.js';
import { offeredForTeamApproval } from './team-approval.js';
import { teamDecisionText } from './words.js';

export function createActionsFeature(
  infra: Infrastructure,
  config: Pick<Config, 'actions'>,
  deps: {
    outbox: TranscriptOutbox;
    mcp: McpToolSource | undefined;
    /** The channel's tool that hands a conversation to a team (undefined: none on that channel). */
    handoffTool(channelId: string, team: TeamId): AssistantTool | undefined;
    /** Queues the service's words into the conversation through its hand-off (`TakeoverService.tellDecision`). */
    takeover: { tellDecision(input: { conversationId: string; by: Parameters<TellDecision>[1]; text: string; key: string }): Promise<boolean> };
    /** The sweeper's pace (default 10 s) and its wait for an answer that arrived in time (default `ANSWER_GRACE_MS`). */
    sweep?: { actionSweepMs?: number | undefined; actionAnswerGraceMs?: number | undefined };
  },
) {
  const { logger, metrics } = infra;
  const { mcp } = deps;
  const settings = config.actions;
  const store = createActionStore(infra.redis, deps.outbox);
  const records = createActionRecords(infra.mongo);
  // The channel's own hand-off tool, so the team is reached as the customer would be (and the web asks for a contact first).
  const handToTeam: ActionsOptions['handToTeam'] = async (record, call) => {
    const handoff = deps.handoffTool(call.channelId, settings.handoffTeam);
    if (!handoff) return { handedOff: false, reason: 'No team can take this over here: tell the customer to contact the business.' };
    try {
      const outcome = (await handoff.execute({ reason: `Approve a change: ${record.title}`.slice(0, 300) }, call)) as HandoffOutcome;
      return outcome.status === 'unavailable' ? { handedOff: false, reason: outcome.nextSteps } : { handedOff: true, nextSteps: outcome.nextSteps };
    } catch (error) {
      return { handedOff: false, reason: `To hand it to the team with ${handoff.name}: ${errorText(error)}` };
    }
  };
  // The MCP server's scoped writes, offered as tools that propose, never run.
  const actions =
    mcp && settings.enabled
      ? createActions({
          store,
          source: mcp,
          confirmTtlSeconds: settings.confirmTtlSeconds,
          irreversibleOptIn: new Set(settings.irreversibleTools),
          teamApproval: new Set(settings.teamApprovalTools),
          handToTeam,
          logger,
          metrics,
        })
      : undefined;
  // Writes a teammate must approve reach the roles admitting reversible writes in their category, even irreversible ones.
  const forTeamApproval = offeredForTeamApproval(new Set(settings.teamApprovalTools));
  // Reads and writes as one catalogue, built again only when either listing changed (not per turn).
  let joined: { reads: readonly AssistantTool[]; writes: readonly AssistantTool[]; all: readonly AssistantTool[] } | undefined;
  const withActions = (reads: readonly AssistantTool[], writes: readonly AssistantTool[]) => {
    if (joined?.reads !== reads || joined.writes !== writes) joined = { reads, writes, all: [...reads, ...writes] };
    return joined.all;
  };
  const sweeper = actions
    ? createActionSweeper({
        store,
        runner: actions.runner,
        logger,
        ...(deps.sweep?.actionSweepMs ? { intervalMs: deps.sweep.actionSweepMs } : {}),
        ...(deps.sweep?.actionAnswerGraceMs !== undefined ? { graceMs: deps.sweep.actionAnswerGraceMs } : {}),
      })
    : undefined;
  // The customer hears what the team decided, in the service's words, through their conversation's hand-off.
  const tellDecision: TellDecision = async (record, by) => {
    const text = teamDecisionText(record);
    if (!text) return;
    await deps.takeover.tellDecision({ conversationId: record.conversationId, by, text, key: `action:${record._id}:decided` });
  };

  return {
    /** A hand-off carries the conversation's changes only a teammate may run. */
    pendingTeamActions: async (conversationId: string) =>
      (await store.ofConversation(conversationId))
        .filter((action) => action.confirmer === 'teammate' && action.state === 'proposed')
        .map((action) => ({ id: action._id, title: action.title, summary: action.summary })),
    /** The MCP tools a turn may offer: the reads, and the writes as proposals when actions are on. */
    mcpTools: actions ? () => withActions(mcp?.tools() ?? [], forTeamApproval(actions.tools())) : () => mcp?.tools() ?? [],
    /** What the orchestrator asks of actions: a confirmation while its write is not listed, a tap with nothing pending. */
    turnHooks: actions
      ? {
          resumeUnlisted: (_tool: string, data: unknown, answer: string, call: ToolCallContext) => actions.resumeUnlisted(data, answer, call),
          staleTap: actions.staleTap,
        }
      : {},
    /** `GET /admin/actions`, and a teammate's decision on a change handed to the team: found by `_id` in MongoDB, run from Redis. */
    admin: {
      list: records.list,
      ...(actions
        ? {
            decide: async (actionId: string, decision: { run: boolean; by: string }) => {
              const conversationKey = await records.conversationOf(actionId);
              if (!conversationKey) return { outcome: 'unknown' as const };
              const decided = await actions.decide(conversationKey, actionId, decision);
              // Decided (and perhaps run) whatever telling the customer does: a failure to queue it is logged, never a 503 that reads "not run".
              if (decided.outcome === 'decided') {
                await tellDecision(decided.action, { id: decision.by, name: decision.by.replace(/^admin:/, ''), via: 'admin' }).catch((error: unknown) =>
                  logger.error('action-decision-untold', { actionId, error }),
                );
              }
              return decided;
            },
          }
        : {}),
    },
    /** The transcript page's view of a conversation's actions (none when actions are off). */
    page: actions ? pageActions(actions, store, records, tellDecision) : undefined,
    start: () => sweeper?.start(),
    close: async () => sweeper?.close(),
  };
}
