/**
 * The business's tools as a feature: the MCP read-only source (when MCP_URL is set), connected in
 * the background and `degraded` in readiness while it is down, and `select_entity`.
 */
import type { Config } from '../config.js';
import type { Infrastructure, ReadinessCheck } from '../infrastructure.js';
import { assertMcpConnected, createMcpToolSource } from './mcp-tool-source.js';
import { createSelectEntityTool } from './select-entity.js';

export function createToolsFeature(infra: Infrastructure, config: Pick<Config, 'mcp'>) {
  const { mcp: settings } = config;
  const mcp = settings
    ? createMcpToolSource({
        url: settings.url,
        ...(settings.authToken ? { headers: { authorization: `Bearer ${settings.authToken}` } } : {}),
        categoryPrefixes: settings.categoryPrefixes,
        publicCategories: settings.publicCategories,
        scopeArguments: settings.scopeArguments,
        logger: infra.logger,
        metrics: infra.metrics,
      })
    : undefined;
  return {
    mcp,
    selectEntity: createSelectEntityTool(),
    // Turns go on without the business's tools while the MCP server is down (reconnected in the background): `degraded`.
    readiness: (mcp ? [{ name: 'mcp', check: async () => assertMcpConnected(mcp), degradable: true }] : []) satisfies ReadinessCheck[],
    /** Waits for the first connection attempt only. */
    start: async () => mcp?.start(),
    close: async () => mcp?.close().catch(() => undefined),
  };
}
