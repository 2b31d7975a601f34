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
