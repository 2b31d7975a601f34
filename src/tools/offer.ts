/**
 * Step 4: the tools a leg offers. Candidates are the MCP reads and the channel's tools,
 * narrowed to the routed role's scope; the role's always-offered set comes first, then — when
 * there are more than MAX_TURN_TOOLS candidates, so the judge ranked them — its ranked names
 * and the channel's tools, then the rest in catalogue order. Ranking orders, it never narrows:
 * the one cap is MAX_OFFERED_TOOLS, whatever the catalogue's size.
 */
import type { RoleDefinition } from '../contracts/index.js';
import { toolIsInScope, type AssistantTool } from '../contracts/tool.js';

export const MAX_OFFERED_TOOLS = 20;
export const MAX_TURN_TOOLS = 12;

export interface OfferInput {
  role: RoleDefinition;
  channelTools: readonly AssistantTool[];
  mcpTools: readonly AssistantTool[];
  rankedNames?: readonly string[];
}

export function offerTools({ role, channelTools, mcpTools, rankedNames = [] }: OfferInput): AssistantTool[] {
  const candidates = new Map<string, AssistantTool>();
  for (const tool of [...channelTools, ...mcpTools]) {
    if (!candidates.has(tool.name) && toolIsInScope(tool, role.toolScope)) candidates.set(tool.name, tool);
  }
  const excluded = new Set<string>(role.toolScope.exclude ?? []);
  const offered = new Map<string, AssistantTool>();
  const add = (tool: AssistantTool | undefined) => {
    if (tool && !excluded.has(tool.name) && offered.size < MAX_OFFERED_TOOLS) offered.set(tool.name, tool);
  };
  const catalogue = new Map([...channelTools, ...mcpTools].map((tool) => [tool.name, tool]));
  for (const name of role.alwaysOffered ?? []) add(catalogue.get(name));
  if (candidates.size > MAX_TURN_TOOLS) {
    for (const name of rankedNames) add(candidates.get(name));
    // Channel tools are the conversation's controls (hand-offs): keep them ahead of unranked reads.
    for (const tool of candidates.values()) if (tool.origin === 'channel') add(tool);
  }
  for (const tool of candidates.values()) add(tool);
  return [...offered.values()];
}
