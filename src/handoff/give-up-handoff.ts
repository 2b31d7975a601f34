/**
 * A message the service gave up on goes to a person: a hand-off to the team of the
 * conversation's role (the role's `{handoff}` binding), whose notice carries the unanswered
 * messages, and the words that tell the customer so in their language — that a person of the
 * team will answer here, or, while the team is closed, when it is back. Undefined when no team
 * can take it (none bound to the role, or not configured): the caller apologises without it.
 * A second give-up while the hand-off is open is added to it (the team is not notified again).
 */
import { fill } from '../words/hours-words.js';
import { giveUpWords } from '../words/give-up-words.js';
import { languageOf } from '../words/language.js';
import { teamName } from '../words/team-words.js';
import type { CustomerReach } from './handoff-tools.js';
import { HANDOFF_TOOL_NAMES } from './handoff-tools.js';
import type { HandoffService } from './handoff-service.js';
import type { TeamId, Teams } from './teams.js';

export interface GivenUpMessages {
  channelId: string;
  conversationId: string;
  roleId: string;
  customer: { address: string; displayName?: string | undefined };
  /** The batch's messages, oldest first: none was answered. */
  unanswered: readonly string[];
  /** What the conversation said before them (recent history, oldest first). */
  before: readonly { direction: 'inbound' | 'outbound'; text: string }[];
  /** The channel's language code for the customer, when it has one. */
  language?: string | undefined;
}

/**
 * Hands the messages given up on to a person: the words that tell the customer so, or undefined
 * when no team can take them. The turn's give-up handler (`src/turn/give-up.ts`) calls it.
 */
export type GiveUpHandOver = (failed: GivenUpMessages) => Promise<{ text: string } | undefined>;

/** The most unanswered messages a hand-off carries (a batch holds at most five). */
const UNANSWERED = 5;

export function createGiveUpHandOver(options: {
  service: HandoffService;
  teams: Teams;
  /** Which hand-off tool each role's `{handoff}` means (role id → capability → tool name). */
  bindings: Readonly<Record<string, Readonly<Record<string, string>>>>;
  /** How a channel's own address reaches the customer, for channels that have one (WhatsApp). */
  reachOf(channelId: string): CustomerReach | undefined;
}): GiveUpHandOver {
  const teamOf = (roleId: string): TeamId | undefined => {
    const tool = options.bindings[roleId]?.handoff;
    return (Object.keys(HANDOFF_TOOL_NAMES) as TeamId[]).find((team) => HANDOFF_TOOL_NAMES[team] === tool);
  };

  return async (failed) => {
    const teamId = teamOf(failed.roleId);
    const team = teamId ? options.teams[teamId] : undefined;
    if (!teamId || !team) return undefined;
    const reach = options.reachOf(failed.channelId);
    const language = languageOf(failed.language);
    const unanswered = failed.unanswered.slice(-UNANSWERED);
    const outcome = await options.service.request({
      team: teamId,
      reason: `The assistant could not answer ${unanswered.length === 1 ? 'this message' : `these ${unanswered.length} messages`}: please answer the customer.`,
      channel: failed.channelId,
      conversationId: failed.conversationId,
      roleId: failed.roleId,
      customer: { address: failed.customer.address, ...(failed.customer.displayName ? { name: failed.customer.displayName } : {}) },
      contact: reach?.contactOf(failed.customer.address) ?? {},
      facts: {},
      lastMessages: [...failed.before.slice(-(6 - unanswered.length)), ...unanswered.map((text) => ({ direction: 'inbound' as const, text }))],
      ...(reach ? { reachedHere: reach.phrase } : {}),
      language,
    });
    if (outcome.status === 'unavailable') return undefined;
    const words = giveUpWords(language);
    // A closed team: its opening, in the customer's language (out-of-hours.ts).
    if (outcome.opensAt !== undefined) return { text: `${words.handedOverClosed} ${outcome.customerText}` };
    return { text: fill(words.handedOver, { team: teamName({ id: teamId, label: team.label, labels: team.labels }, language) }) };
  };
}
