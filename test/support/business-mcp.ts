/**
 * The test MCP server connected through the production MCP tool source, with the category
 * map an operator would configure for it.
 */
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { createMcpToolSource, type McpToolSource } from '../../src/tools/mcp-tool-source.js';
import { startMcpServer, type McpTestServer } from './mcp-server.js';

export const BUSINESS_CATEGORY_PREFIXES = 'invoice_=invoice,plan_=catalog,help_=knowledge,account_=account,catalog_=catalog';

const businessCategoryPrefixes = Object.fromEntries(BUSINESS_CATEGORY_PREFIXES.split(',').map((pair) => pair.split('=') as [string, string]));

export async function connectBusinessMcp(options: { extraReadTools?: number } = {}): Promise<{
  server: McpTestServer;
  source: McpToolSource;
  close(): Promise<void>;
}> {
  const server = await startMcpServer(options);
  const source = createMcpToolSource({
    url: server.url,
    categoryPrefixes: businessCategoryPrefixes,
    logger: createLogger({ level: 'error', sink: () => undefined }),
    metrics: createMetrics(),
  });
  await source.connect();
  return {
    server,
    source,
    async close() {
      await source.close();
      await server.close();
    },
  };
}
