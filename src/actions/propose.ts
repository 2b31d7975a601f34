/**
 * Freezing a write's call: its arguments bound (scoped ones to the verified caller), an enum
 * question asked first when one is unsettled, then a `proposed` action stored and the
 * customer's confirmation asked — or, for a change only a teammate may run, handed to the team.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../logger.js';
import type { McpWriteTool } from '../tools/mcp-tool-source.js';
import { bindArguments, ToolScopeError } from '../tools/scope.js';
import { ToolInterrupt, type Caller, type ToolCallContext } from '../contracts/tool.js';
import type { Language } from '../words/language.js';
import type { ActionRecord, ActionStore } from './action-store.js';
import { confirmationChoices, confirmationText, renderSummary } from './summary.js';
import { splitLanguage } from './write-language.js';
import { clockOf, fillWords, wordsFor } from './words.js';

/** How long a change handed to the team waits for a teammate to run or decline it. */
const TEAM_CONFIRM_SECONDS = 24 * 60 * 60;

/**
 * Hands the conversation to the team for a change only a teammate may run (the channel's
 * hand-off, carrying the change); what the assistant should say next, or why it could not.
 */
export type HandToTeam = (
  record: ActionRecord,
  context: ToolCallContext,
) => Promise<{ handedOff: true; nextSteps: string } | { handedOff: false; reason: string }>;

export interface ProposerOptions {
  store: ActionStore;
  logger: Logger;
  now: () => number;
  confirmTtlSeconds: number;
  irreversibleOptIn: ReadonlySet<string>;
  teamApproval?: ReadonlySet<string>;
  handToTeam?: HandToTeam;
  /** `actions_total{tool,outcome}`. */
  count: (tool: string, outcome: string) => void;
  /** The enum question for an unsettled argument, if any (nothing is proposed then). */
  askChoice: (write: McpWriteTool, args: Record<string, unknown>, context: ToolCallContext, language: Language) => ToolInterrupt | undefined;
}

export function createProposer(options: ProposerOptions) {
  const { store, logger, now, count } = options;

  /** Freezes a write's call and asks for what it still needs: an enum argument, the customer's confirmation, or the team's. */
  return async (write: McpWriteTool, raw: unknown, context: ToolCallContext): Promise<unknown> => {
    const { input, language } = splitLanguage(write, raw, context);
    const caller: Caller = context.caller;
    if (caller.kind !== 'contact') throw new ToolScopeError(write.name, 'no-identity', `${write.name} needs a verified customer; it was not proposed.`);
    // The frozen arguments: scoped ones from the verified caller (a foreign value is refused, counted by the caller of execute).
    const args = bindArguments(write.name, write.access, write.declared, input, caller);
    const question = options.askChoice(write, args, context, language);
    if (question) return question;
    // An irreversible write the business has not opted in: proposed to the team, never to the customer.
    const forTeam = (write.effect === 'irreversible' && !options.irreversibleOptIn.has(write.name)) || options.teamApproval?.has(write.name) === true;
    const _id = randomUUID();
    const summary = renderSummary({
      title: write.title,
      args,
      scoped: Object.keys(write.access.arguments),
      jsonSchema: write.inputSchema.jsonSchema,
      caller,
      language: forTeam ? 'en' : language,
    });
    const createdAt = new Date(now()).toISOString();
    const record: ActionRecord = {
      _id,
      conversationId: context.conversationId,
      channel: context.channelId,
      tool: write.name,
      title: write.title,
      effect: write.effect,
      args,
      summary,
      state: 'proposed',
      proposedBy: {
        address: context.customer.address,
        ...(caller.customerId ? { customerId: caller.customerId } : {}),
        ...(caller.entity ? { entityId: caller.entity.id } : {}),
        roleId: context.roleId,
        runId: context.runId,
      },
      calls: 0,
      ...(forTeam ? { confirmer: 'teammate' as const } : {}),
      ...(language !== 'en' ? { language } : {}),
      createdAt,
      expiresAt: new Date(now() + (forTeam ? TEAM_CONFIRM_SECONDS : options.confirmTtlSeconds) * 1000).toISOString(),
      updatedAt: createdAt,
    };
    // The same change done in the last day is asked about as such, never proposed silently as new.
    const [doneAt] = await Promise.all([forTeam ? undefined : store.doneBefore(context.conversationId, record), store.create(context.conversationId, record)]);
    await store.due(context.conversationId, _id, Date.parse(record.expiresAt)).catch((error: unknown) => logger.warn('action-due-unrecorded', { error }));
    count(write.name, forTeam ? 'handed_off' : 'proposed');
    if (forTeam) {
      logger.info('action-handed-off', { actionId: _id, tool: write.name, channelId: context.channelId });
      // The service hands it over itself (the notice and the transcript page carry the change); the model only tells the customer.
      const handed = options.handToTeam
        ? await options.handToTeam(record, context)
        : { handedOff: false as const, reason: 'Hand the conversation to the team.' };
      return {
        status: 'waiting for our team',
        change: summary.replace(/^Please confirm: /, ''),
        note: handed.handedOff
          ? `Nothing has happened yet: a person on our team must approve this change, and the conversation is with them now. Tell the customer so. ${handed.nextSteps}`
          : `Nothing has happened yet: a person on our team must approve this change. Tell the customer so. ${handed.reason}`,
      };
    }
    logger.info('action-proposed', {
      actionId: _id,
      tool: write.name,
      channelId: context.channelId,
      roleId: context.roleId,
      ...(doneAt ? { doneBefore: doneAt } : {}),
    });
    const choices = confirmationChoices(_id, language);
    const text = confirmationText(summary, choices, language);
    const asked = doneAt ? `${fillWords(wordsFor(language).alreadyDone, { time: clockOf(doneAt) })}\n\n${text}` : text;
    return new ToolInterrupt(asked, { actionId: _id, language }, choices, Date.parse(record.expiresAt), language);
  };
}
