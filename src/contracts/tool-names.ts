/**
 * Every tool name a role may name in its scope (`include`, `exclude`, `alwaysOffered`): the
 * channel tools. A misspelt name fails to compile. MCP reads come from the business's server
 * at run time and are admitted by category and effect, never by name.
 */
export const CHANNEL_TOOL_NAMES = ['book_sales_call', 'open_support_chat', 'select_entity'] as const;
export type ChannelToolName = (typeof CHANNEL_TOOL_NAMES)[number];
