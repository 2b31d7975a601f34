/**
 * The hand-off tools a channel offers: `book_sales_call` (to sales) and `open_support_chat`
 * (to support). Irreversible, so roles admit them by name through `include`; what they do is
 * record a hand-off and notify a team, never anything destructive. Whether the customer's
 * address reaches them is the channel's to say (its `CustomerReach`); where it does not (the
 * web), a contact is required first. Which facts a teammate sees is the role's to say. While
 * the team is closed, the service itself tells the customer when it is back, with the reply.
 */
import { z } from 'zod';
import type { Facts } from '../contracts/index.js';
import type { AssistantTool, ToolCallContext } from '../contracts/tool.js';
import type { HandoffAction, HandoffRecord } from './handoff-store.js';
import type { HandoffOutcome, HandoffService } from './handoff-service.js';
import type { TeamId } from './teams.js';

export const HANDOFF_TOOL_NAMES = { sales: 'book_sales_call', support: 'open_support_chat' } as const;

const HandoffInputSchema = z.object({
  reason: z.string().trim().min(5).max(300).describe("What the customer wants from the team, in one line (e.g. 'Demo of the Pro plan for a team of 12')."),
  email: z.email().optional().describe("The customer's email, when they gave one."),
  phone: z
    .string()
    .regex(/^\+?[\d\s().-]{6,24}$/, 'expected a phone number')
    .optional()
    .describe("The customer's phone number, when they gave one."),
  language: z.string().max(10).optional().describe("The language the customer writes in, as an ISO 639-1 code (e.g. 'es')."),
});

/** A channel whose own address reaches the customer (WhatsApp): how a team contacts them there. */
export interface CustomerReach {
  /** The contact details the customer's address gives the team. */
  contactOf(address: string): HandoffRecord['contact'];
  /** How the customer is told they will be contacted, e.g. 'here on WhatsApp'. */
  phrase: string;
}

export interface HandoffToolOptions {
  service: HandoffService;
  /** The conversation's recent messages (before the one being answered). */
  recentMessages(conversationId: string): Promise<readonly { direction: 'inbound' | 'outbound'; text: string }[]>;
  /** How the channel's address reaches the customer; absent (web): an email or phone is required. */
  reach?: CustomerReach;
  /** Facts the routed role keeps to itself (`RoleDefinition.privateFacts`): left out of what the team sees. */
  privateFacts(roleId: string): readonly string[];
  /** Changes of the conversation waiting for a teammate (confirmed actions only a person may run): the hand-off carries them. */
  pendingActions?: (conversationId: string) => Promise<readonly HandoffAction[]>;
  /** Runs after a hand-off is recorded (the web shows a status line). */
  onHandoff?: (context: ToolCallContext, outcome: HandoffOutcome) => Promise<void>;
}

function withoutKeys(facts: Facts, hidden: readonly string[]): Facts {
  return Object.fromEntries(Object.entries(facts).filter(([key]) => !hidden.includes(key)));
}

function handoffTool(team: TeamId, description: string, options: HandoffToolOptions): AssistantTool {
  return {
    name: HANDOFF_TOOL_NAMES[team],
    description,
    origin: 'channel',
    category: 'chat',
    effect: 'irreversible',
    inputSchema: HandoffInputSchema,
    async execute(raw, context) {
      const input = HandoffInputSchema.parse(raw);
      if (!options.reach && !input.email && !input.phone) {
        throw new Error('Ask the customer for an email address or a phone number first, then call this again with it.');
      }
      const actions = (await options.pendingActions?.(context.conversationId)) ?? [];
      const outcome = await options.service.request({
        team,
        reason: input.reason,
        channel: context.channelId,
        conversationId: context.conversationId,
        roleId: context.roleId,
        customer: { address: context.customer.address, ...(context.customer.displayName ? { name: context.customer.displayName } : {}) },
        contact: {
          ...(input.email ? { email: input.email } : {}),
          ...(input.phone ? { phone: input.phone } : {}),
          ...options.reach?.contactOf(context.customer.address),
        },
        facts: withoutKeys({ ...context.facts, ...context.session }, options.privateFacts(context.roleId)),
        lastMessages: [
          ...(await options.recentMessages(context.conversationId)).slice(-5).map(({ direction, text }) => ({ direction, text })),
          { direction: 'inbound', text: context.latestMessage },
        ],
        ...(actions.length ? { actions: [...actions] } : {}),
        ...(options.reach ? { reachedHere: options.reach.phrase } : {}),
        language: input.language ?? context.metadata.language,
        serviceSays: context.sayToCustomer !== undefined,
      });
      await options.onHandoff?.(context, outcome);
      // A closed team: the service tells the customer when it is back, with the reply (the model is told it does).
      if (outcome.opensAt !== undefined && context.sayToCustomer) context.sayToCustomer(outcome.customerText);
      return outcome;
    },
  };
}

export function createHandoffTools(options: HandoffToolOptions): AssistantTool[] {
  return [
    handoffTool(
      'sales',
      'Hand the conversation to the sales team: for a demo, a quote, buying or upgrading, or when the customer asks to talk to sales.',
      options,
    ),
    handoffTool(
      'support',
      'Hand the conversation to the support team: when the customer asks for a person about a problem, or you could not solve it.',
      options,
    ),
  ];
}
