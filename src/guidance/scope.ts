/**
 * Which entries reach a turn and what they say there: an entry applies when the turn's role,
 * channel and site are within its scope and its audience holds on what the channel verified
 * (`identify`'s contact, never the customer's or the model's words); its placeholders are filled
 * from that contact and left out when unknown. The same rules, over every role, channel and site
 * the entries name, check a set against the budgets before it is published (`budgetProblems`),
 * so a turn never has to cut an entry.
 */
import type { LinkedCustomer } from '../contracts/tool.js';
import { CATEGORIES, placeholderPattern, tokensOf, type GuidanceEntry } from './model.js';

/** Where a turn is answered and who the service verified is talking. */
export interface TurnScope {
  roleId: string;
  channel: string;
  site: string | undefined;
  contact: LinkedCustomer | undefined;
}

/** What a placeholder may grow to in the budget (its value is clipped to this many characters). */
const PLACEHOLDER_CHARS = 80;
/** What the judge reads of one escalation entry. */
const JUDGE_ENTRY_CHARS = 200;

const inList = (list: readonly string[] | undefined, value: string | undefined) => !list || (value !== undefined && list.includes(value));

/** Whether an entry's audience holds for this contact (absent audience: everyone). */
function audienceHolds(entry: GuidanceEntry, contact: LinkedCustomer | undefined): boolean {
  const audience = entry.scope.audience;
  if (!audience) return true;
  if (audience.verified !== undefined && audience.verified !== (contact !== undefined)) return false;
  if (audience.entities && !contact?.entities.some((entity) => audience.entities?.includes(entity.id))) return false;
  if (audience.emailDomains) {
    const domain = contact?.email?.split('@').at(-1)?.toLowerCase();
    if (!domain || !audience.emailDomains.includes(domain)) return false;
  }
  return true;
}

/** In scope for the channel, site and contact; `roleId` undefined: for any role. */
export function inScope(entry: GuidanceEntry, scope: Omit<TurnScope, 'roleId'> & { roleId: string | undefined }): boolean {
  const { roles, channels, sites } = entry.scope;
  return (
    (scope.roleId === undefined || inList(roles, scope.roleId)) &&
    inList(channels, scope.channel) &&
    inList(sites, scope.site) &&
    audienceHolds(entry, scope.contact)
  );
}

const oneLine = (value: string) => value.replace(/\s+/g, ' ').trim().slice(0, PLACEHOLDER_CHARS);

/** The verified value of each placeholder (undefined: unknown). */
function placeholderValue(placeholder: string, contact: LinkedCustomer | undefined): string | undefined {
  if (!contact) return undefined;
  const values: Record<string, string | undefined> = {
    'contact.first_name': contact.name.trim().split(/\s+/)[0],
    'contact.name': contact.name,
    'contact.email': contact.email,
    'contact.customer_id': contact.customerId,
  };
  const value = values[placeholder];
  return value ? oneLine(value) : undefined;
}

/** The entry's text with its placeholders filled; an unknown one is left out with the space before it. */
export function filled(text: string, contact: LinkedCustomer | undefined): string {
  return text
    .replace(new RegExp(`[^\\S\\n]?${placeholderPattern().source}`, 'g'), (whole, placeholder: string) => {
      const value = placeholderValue(placeholder, contact);
      return value === undefined ? '' : `${whole.startsWith('{') ? '' : whole[0]}${value}`;
    })
    .replace(/[^\S\n]+([,.!?;:])/g, '$1');
}

const categoryOrder = (entry: GuidanceEntry) => CATEGORIES.indexOf(entry.category);
/** The order entries are quoted in: by category, then by id. */
export const promptOrder = (a: GuidanceEntry, b: GuidanceEntry) => categoryOrder(a) - categoryOrder(b) || a.id.localeCompare(b.id);

/** One entry as the prompt quotes it. */
export const promptLine = (entry: GuidanceEntry, text: string) => `- [${entry.category}] ${text.replace(/\n+/g, ' ')}`;

/** What an entry may cost in the prompt at most (every placeholder at its longest). */
function worstTokens(entry: GuidanceEntry): number {
  const placeholders = [...entry.text.matchAll(placeholderPattern())].length;
  return tokensOf(`${promptLine(entry, entry.text)}\n`) + Math.ceil((placeholders * PLACEHOLDER_CHARS) / 4);
}

/** The judge's line for an escalation entry. */
export const judgeLine = (entry: GuidanceEntry) => {
  const text = entry.text.replace(/\s+/g, ' ');
  return `- ${entry.id} (to ${entry.team}): ${text.length > JUDGE_ENTRY_CHARS ? `${text.slice(0, JUDGE_ENTRY_CHARS - 1)}…` : text}`;
};

/** Escalation entries naming a team: what the judge is asked about. */
export const handsOver = (entry: GuidanceEntry) => entry.category === 'escalation' && entry.team !== undefined;

export interface BudgetProblem {
  where: { role?: string; channel?: string; site?: string };
  /** `prompt`: the role's brief; `judge`: the judge's list of escalation entries. */
  budget: 'prompt' | 'judge';
  tokens: number;
  limit: number;
  /** The entries that would not fit, in the order they would be quoted. */
  entries: string[];
}

/** The entries a turn would have to leave out, taking them in order as it does (one that does not fit is skipped), and the tokens all need. */
function overflow(entries: readonly GuidanceEntry[], cost: (entry: GuidanceEntry) => number, limit: number) {
  let used = 0;
  let needed = 0;
  const cut: string[] = [];
  for (const entry of entries) {
    const tokens = cost(entry);
    needed += tokens;
    if (used + tokens > limit) cut.push(entry.id);
    else used += tokens;
  }
  return { tokens: needed, cut };
}

/**
 * Every place the set could be over a budget: each role × channel × site the entries name (and
 * "any other"), counting every audience as holding and every placeholder at its longest.
 */
export function budgetProblems(
  entries: readonly GuidanceEntry[],
  roles: readonly string[],
  budgets: { promptTokens: number; judgeTokens: number },
): BudgetProblem[] {
  const named = (pick: (entry: GuidanceEntry) => readonly string[] | undefined) => [...new Set(entries.flatMap((entry) => pick(entry) ?? []))];
  const channels = [...named((entry) => entry.scope.channels), undefined];
  const sites = [...named((entry) => entry.scope.sites), undefined];
  const matches = (entry: GuidanceEntry, role: string | undefined, channel: string | undefined, site: string | undefined) =>
    (role === undefined || inList(entry.scope.roles, role)) &&
    (entry.scope.channels === undefined || (channel !== undefined && entry.scope.channels.includes(channel))) &&
    (entry.scope.sites === undefined || (site !== undefined && entry.scope.sites.includes(site)));
  const problems: BudgetProblem[] = [];
  const ordered = [...entries].sort(promptOrder);
  for (const channel of channels) {
    for (const site of sites) {
      const where = { ...(channel ? { channel } : {}), ...(site ? { site } : {}) };
      const judged = ordered.filter((entry) => handsOver(entry) && matches(entry, undefined, channel, site));
      const judge = overflow(judged, (entry) => tokensOf(`${judgeLine(entry)}\n`), budgets.judgeTokens);
      if (judge.cut.length > 0) problems.push({ where, budget: 'judge', tokens: judge.tokens, limit: budgets.judgeTokens, entries: judge.cut });
      for (const role of new Set([...roles, ...named((entry) => entry.scope.roles)])) {
        const prompt = overflow(
          ordered.filter((entry) => matches(entry, role, channel, site)),
          worstTokens,
          budgets.promptTokens,
        );
        if (prompt.cut.length > 0)
          problems.push({ where: { role, ...where }, budget: 'prompt', tokens: prompt.tokens, limit: budgets.promptTokens, entries: prompt.cut });
      }
    }
  }
  return problems;
}
