/**
 * The tools a simulated turn is offered, built per run from what a real turn gets, so that the
 * assistant does what it would do while nothing leaves the simulation:
 *   - the MCP server's reads, only when the scenario asks for them (`mcpReads`): the real reads,
 *     bound to the scenario's caller by the same scope rules as a customer's turn;
 *   - the knowledge search and brief on the business's real index, read-only (a miss is not
 *     recorded in the knowledge's list of unanswered questions);
 *   - the MCP server's writes as offered to customers, each only proposed: its arguments bound to
 *     the caller (a foreign value is refused as in a real turn), the service's "Please confirm"
 *     summary shown (or, for a change only a teammate may run, the team's note), recorded in the
 *     result and never run, whatever the customer answers;
 *   - the channel's hand-offs (the service's own for an applying escalation entry too), recorded as
 *     "would hand over to <team>": no hand-off record, no notice to a team;
 *   - `select_entity`, which only asks the customer and sets the simulation's own session.
 * Any other channel tool is left out.
 */
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import { confirmationChoices, confirmationText, renderSummary } from '../actions/summary.js';
import { splitLanguage } from '../actions/write-language.js';
import type { ChannelDefinition } from '../contracts/index.js';
import { CHANNEL_TOOL_NAMES } from '../contracts/tool-names.js';
import { ToolInterrupt, type AssistantTool, type ToolCallContext } from '../contracts/tool.js';
import { HANDOFF_TOOL_NAMES } from '../handoff/handoff-tools.js';
import type { TeamId } from '../handoff/teams.js';
import type { TurnKnowledge } from '../orchestrator/prepare-turn.js';
import type { McpWriteTool } from '../tools/mcp-tool-source.js';
import { bindArguments, ToolScopeError } from '../tools/scope.js';

/** What a simulation may reach of the service's tools (each absent: not offered). */
export interface SimulationToolSources {
  /** The MCP server's tools as a customer's turn is offered them: its reads, and its writes as proposals. */
  mcpTools?: () => readonly AssistantTool[];
  /** The knowledge search (`search_knowledge`, the business's own index). */
  knowledgeTools?: () => readonly AssistantTool[];
  /** The MCP server's writes as listed (their titles and schemas, for the summary). */
  writeTools?: () => readonly McpWriteTool[];
  /** The knowledge's turn hook (the brief's passages). */
  knowledge?: TurnKnowledge;
  /** Which writes a teammate must approve, and the team they go to (ACTION_TOOLS_*). */
  actions?: { irreversibleTools: readonly string[]; teamApprovalTools: readonly string[]; handoffTeam: TeamId };
}

/** A write the simulated assistant proposed (never run). */
export interface ProposedWrite {
  tool: string;
  arguments: Record<string, unknown>;
  /** The service's summary, as the customer (or, for `to: "team"`, the teammate) would see it. */
  summary: string;
  to: 'customer' | 'team';
}

/** A hand-off the simulated conversation would have made (no team was told). */
export interface SimulatedHandoff {
  team: string;
  reason: string;
}

const SELECT_ENTITY: (typeof CHANNEL_TOOL_NAMES)[number] = 'select_entity';
const TEAM_OF_TOOL = new Map<string, TeamId>(Object.entries(HANDOFF_TOOL_NAMES).map(([team, tool]) => [tool, team as TeamId]));
const NOT_RUN = 'This is a simulation: the change above was not run.';

export interface SimulationTools {
  channelTools: readonly AssistantTool[];
  mcpTools: () => readonly AssistantTool[];
  knowledge: TurnKnowledge | undefined;
  /** The writes the run proposed so far, in order. */
  proposed: ProposedWrite[];
  /** The hand-offs it would have made so far, in order. */
  handoffs: SimulatedHandoff[];
  /** The service's lines since the last call (what a grader reads besides the conversation). */
  takeLines(): string[];
}

export function createSimulationTools(
  sources: SimulationToolSources,
  channel: Partial<Pick<ChannelDefinition, 'tools'>> | undefined,
  options: { mcpReads: boolean },
): SimulationTools {
  const proposed: ProposedWrite[] = [];
  const handoffs: SimulatedHandoff[] = [];
  let lines: string[] = [];

  const handOver = (tool: AssistantTool, team: TeamId): AssistantTool => ({
    ...tool,
    async execute(raw) {
      const input = (tool.inputSchema as z.ZodType<{ reason: string }>).parse(raw);
      handoffs.push({ team, reason: input.reason });
      lines.push(`Would hand over to the ${team} team (no team was told): ${input.reason}`);
      return {
        status: 'handed_off',
        team,
        nextSteps: `The ${team} team will follow up. Tell the customer so.`,
        customerText: `A person from our ${team} team will follow up.`,
      };
    },
  });

  const forTeam = (write: McpWriteTool) =>
    sources.actions !== undefined &&
    ((write.effect === 'irreversible' && !sources.actions.irreversibleTools.includes(write.name)) || sources.actions.teamApprovalTools.includes(write.name));

  /** Freezes the call as the confirmed-action path would, records it, and asks (or tells) without ever running it. */
  const propose = (tool: AssistantTool, write: McpWriteTool): AssistantTool => ({
    ...tool,
    async execute(raw, context: ToolCallContext) {
      const { input, language } = splitLanguage(write, raw, context);
      const caller = context.caller;
      if (caller.kind !== 'contact') throw new ToolScopeError(write.name, 'no-identity', `${write.name} needs a verified customer; it was not proposed.`);
      const args = bindArguments(write.name, write.access, write.declared, input, caller);
      const team = forTeam(write);
      const scoped = Object.keys(write.access.arguments);
      const summary = renderSummary({ title: write.title, args, scoped, jsonSchema: write.inputSchema.jsonSchema, caller, language: team ? 'en' : language });
      proposed.push({ tool: write.name, arguments: args, summary, to: team ? 'team' : 'customer' });
      lines.push(`Proposed, never run (${team ? 'for a teammate to approve' : 'for the customer to confirm'}): ${summary.replace(/\n/g, ' ')}`);
      if (team && sources.actions) {
        const handoffTeam = sources.actions.handoffTeam;
        handoffs.push({ team: handoffTeam, reason: `Approve a change: ${write.title}` });
        lines.push(`Would hand over to the ${handoffTeam} team (no team was told): Approve a change: ${write.title}`);
        return {
          status: 'waiting for our team',
          change: summary.replace(/^Please confirm: /, ''),
          note: 'Nothing has happened yet: a person on our team must approve this change, and the conversation is with them now. Tell the customer so.',
        };
      }
      const choices = confirmationChoices(randomUUID(), language);
      return new ToolInterrupt(confirmationText(summary, choices, language), { simulated: true }, choices, undefined, language);
    },
    resume: async () => ({ reply: NOT_RUN }),
  });

  /** The MCP server's reads only when the scenario allows them, its writes as proposals, the knowledge search always. */
  const mcpTools = () => {
    const listed = new Map((sources.writeTools?.() ?? []).map((write) => [write.name, write]));
    const fromServer = (sources.mcpTools?.() ?? []).flatMap((tool): AssistantTool[] => {
      if (tool.effect === 'read') return options.mcpReads ? [tool] : [];
      const write = listed.get(tool.name);
      return write ? [propose(tool, write)] : [];
    });
    return [...fromServer, ...(sources.knowledgeTools?.() ?? [])];
  };

  const channelTools = (channel?.tools ?? []).flatMap((tool): AssistantTool[] => {
    const team = TEAM_OF_TOOL.get(tool.name);
    if (team) return [handOver(tool, team)];
    return tool.name === SELECT_ENTITY ? [tool] : [];
  });

  const knowledge: TurnKnowledge | undefined = sources.knowledge && {
    hasContent: () => sources.knowledge?.hasContent() === true,
    brief: async (input) => sources.knowledge?.brief(input),
    // Read-only: a simulated question nothing answers is not listed among the customers' misses.
    recordMiss: async () => undefined,
  };

  return {
    channelTools,
    mcpTools,
    knowledge,
    proposed,
    handoffs,
    takeLines() {
      const taken = lines;
      lines = [];
      return taken;
    },
  };
}
