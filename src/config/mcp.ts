/** The MCP server: its reads (categories, public ones, scoped arguments) and its writes, run as confirmed actions. */
import { z } from 'zod';
import { httpUrl, jsonText, positiveInt } from './fields.js';

export const mcpFields = {
  MCP_SERVER_URL: httpUrl.optional(),
  MCP_AUTH_TOKEN: z.string().min(1).optional(),
  MCP_CATEGORY_PREFIXES: z
    .string()
    .regex(/^([a-z0-9_]+=[a-z0-9_]+)(,[a-z0-9_]+=[a-z0-9_]+)*$/i, 'expected prefix=category pairs, e.g. invoice_=invoice,plan_=catalog')
    .optional(),
  MCP_PUBLIC_CATEGORIES: z
    .string()
    .regex(/^[a-z0-9_]+(,[a-z0-9_]+)*$/i, 'expected comma-separated categories, e.g. catalog,knowledge')
    .default('catalog,knowledge,help,pricing'),
  MCP_SCOPE_ARGUMENTS: jsonText()
    .pipe(
      z.record(z.string().min(1), z.record(z.string().min(1), z.enum(['customer', 'entity'])), {
        error: 'expected JSON {"<tool>": {"<argument>": "customer" | "entity"}}',
      }),
    )
    .optional(),
};

export const actionFields = {
  // Confirmed actions (src/actions/): the MCP server's scoped writes, each run only on the customer's confirmation.
  ACTIONS_ENABLED: z.enum(['true', 'false'], { error: 'expected true or false' }).default('true'),
  ACTION_CONFIRM_TTL_SECONDS: positiveInt(600),
  ACTION_TOOLS_IRREVERSIBLE: z
    .string()
    .regex(/^([a-z0-9_.-]+(,[a-z0-9_.-]+)*)?$/i, 'expected comma-separated tool names, e.g. refund_create')
    .default(''),
  // Writes a teammate must approve (reversible or irreversible): handed to the team, never confirmed by the customer; wins over ACTION_TOOLS_IRREVERSIBLE.
  ACTION_TOOLS_TEAM_APPROVAL: z
    .string()
    .regex(/^([a-z0-9_.-]+(,[a-z0-9_.-]+)*)?$/i, 'expected comma-separated tool names, e.g. order_cancel')
    .default(''),
  ACTION_HANDOFF_TEAM: z.enum(['support', 'sales'], { error: 'expected support or sales' }).default('support'),
};

export interface McpConfig {
  url: string;
  authToken: string | undefined;
  categoryPrefixes: Record<string, string>;
  /** Categories anyone may read; every other read must be scoped to a verified caller. */
  publicCategories: string[];
  /** Tool → argument → what the runtime binds it to. */
  scopeArguments: Record<string, Record<string, 'customer' | 'entity'>>;
}

/**
 * Confirmed actions: on or off, how long a confirmation waits, irreversible writes customers may
 * confirm, writes a teammate must approve (whatever their effect; wins over `irreversibleTools`).
 */
export interface ActionsConfig {
  enabled: boolean;
  confirmTtlSeconds: number;
  irreversibleTools: string[];
  teamApprovalTools: string[];
  handoffTeam: 'support' | 'sales';
}

type McpEnv = z.infer<z.ZodObject<typeof mcpFields>>;
type ActionsEnv = z.infer<z.ZodObject<typeof actionFields>>;

/** The MCP server's settings; undefined without MCP_SERVER_URL. */
export const mcpConfig = (env: McpEnv): McpConfig | undefined =>
  env.MCP_SERVER_URL
    ? {
        url: env.MCP_SERVER_URL,
        authToken: env.MCP_AUTH_TOKEN,
        categoryPrefixes: Object.fromEntries(
          (env.MCP_CATEGORY_PREFIXES ?? '')
            .split(',')
            .filter(Boolean)
            .map((pair) => pair.split('=') as [string, string]),
        ),
        publicCategories: env.MCP_PUBLIC_CATEGORIES.split(','),
        scopeArguments: env.MCP_SCOPE_ARGUMENTS ?? {},
      }
    : undefined;

export const actionsConfig = (env: ActionsEnv): ActionsConfig => ({
  enabled: env.ACTIONS_ENABLED === 'true',
  confirmTtlSeconds: env.ACTION_CONFIRM_TTL_SECONDS,
  irreversibleTools: env.ACTION_TOOLS_IRREVERSIBLE.split(',').filter(Boolean),
  teamApprovalTools: env.ACTION_TOOLS_TEAM_APPROVAL.split(',').filter(Boolean),
  handoffTeam: env.ACTION_HANDOFF_TEAM,
});
