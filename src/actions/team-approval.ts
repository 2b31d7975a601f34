/**
 * Where a write a teammate must approve (ACTION_TOOLS_TEAM_APPROVAL) is offered. A role admits
 * tools by effect and category, and no shipped role admits `irreversible`: an irreversible write
 * listed for team approval would reach no role, and the team-approval path would be unreachable
 * for exactly the writes it suits best. Neither the model nor the customer can make such a write
 * happen — calling it only proposes a change a teammate runs or declines — so it is offered as a
 * reversible write is: to every role admitting `reversible` in its category (a role admitting
 * `irreversible` but not `reversible` — none is shipped — is then not offered it). Only the offer
 * changes: the action's record keeps the server's effect, and who confirms it is decided by the
 * actions module from the write itself.
 */
import type { AssistantTool } from '../contracts/tool.js';

/** The action tools as offered: listed irreversible writes admitted like reversible ones; the same array back while its input is the same. */
export function offeredForTeamApproval(teamApproval: ReadonlySet<string>): (tools: readonly AssistantTool[]) => readonly AssistantTool[] {
  let last: { tools: readonly AssistantTool[]; offered: readonly AssistantTool[] } | undefined;
  return (tools) => {
    if (teamApproval.size === 0) return tools;
    if (last?.tools !== tools) {
      const offered = tools.map((tool) => (tool.effect === 'irreversible' && teamApproval.has(tool.name) ? { ...tool, effect: 'reversible' as const } : tool));
      last = { tools, offered };
    }
    return last.offered;
  };
}
