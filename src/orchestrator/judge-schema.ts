/**
 * The judgment's structured output: the schema built from the roster (route, tier, scope, ranked
 * tools, every role's facts namespaced `role.<id>.<key>`, and the fields the turn's hooks add),
 * each output specification built once per roster and shortlist and reused, and the routed
 * role's facts read back from it.
 */
import { Output, type DeepPartial, type OutputInterface } from 'ai';
import { z } from 'zod';
import type { FactQuestion, Facts, RoleDefinition } from '../contracts/index.js';

export const factKey = (roleId: string, key: string) => `role.${roleId}.${key}`;

export function factSchema(question: FactQuestion) {
  if (question.type === 'number') return z.number().nullable();
  if (question.type === 'boolean') return z.boolean().nullable();
  return question.values?.length ? z.enum(question.values as [string, ...string[]]).nullable() : z.string().max(200).nullable();
}

export function roleFacts(role: RoleDefinition) {
  return Object.entries(role.facts ?? {});
}

export function roleIds(roles: readonly RoleDefinition[]): [string, ...string[]] {
  return roles.map((role) => role.id) as [string, ...string[]];
}

const KnowledgeJudgmentSchema = z.object({ needed: z.boolean(), terms: z.string().max(200) });

function buildJudgmentSchema(
  roles: readonly RoleDefinition[],
  candidateNames: readonly string[],
  knowledge: boolean,
  feedback: boolean,
  guidance: readonly string[],
) {
  const facts: Record<string, z.ZodType> = {};
  for (const role of roles) {
    for (const [key, question] of roleFacts(role)) facts[factKey(role.id, key)] = factSchema(question);
  }
  return z.object({
    route: z.enum(roleIds(roles)),
    tier: z.enum(['fast', 'smart']),
    inScope: z.boolean(),
    rankedTools: candidateNames.length ? z.array(z.enum(candidateNames as [string, ...string[]])).max(12) : z.array(z.string()).max(0),
    facts: z.object(facts),
    ...(knowledge ? { knowledge: KnowledgeJudgmentSchema } : {}),
    ...(feedback ? { feedbackOnly: z.boolean() } : {}),
    ...(guidance.length > 0 ? { guidance: z.array(z.enum(guidance as [string, ...string[]])).max(guidance.length) } : {}),
  });
}

type JudgmentOutput = Omit<z.infer<ReturnType<typeof buildJudgmentSchema>>, 'knowledge' | 'feedbackOnly' | 'guidance'> & {
  knowledge?: z.infer<typeof KnowledgeJudgmentSchema>;
  feedbackOnly?: boolean;
  guidance?: string[];
};
export type StructuredOutput<T> = OutputInterface<T, DeepPartial<T>, never>;

/** How many shortlists' outputs one roster keeps (a shortlist is at most 30 of the catalogue's names). */
const CACHED_SHORTLISTS = 256;

/**
 * The AI SDK turns a zod schema into JSON Schema on every call it is given anew (most of a
 * judge call's CPU). The roster is fixed at start-up and shortlists repeat, so each output
 * specification is built once and reused: it holds no per-call state.
 */
const outputs = new WeakMap<object, Map<string, StructuredOutput<unknown>>>();

export function cachedOutput<T>(owner: object, key: string, build: () => z.ZodType<T>): StructuredOutput<T> {
  let byKey = outputs.get(owner);
  if (!byKey) outputs.set(owner, (byKey = new Map()));
  const found = byKey.get(key);
  if (found) return found as StructuredOutput<T>;
  const output = Output.object({ schema: build() });
  if (byKey.size >= CACHED_SHORTLISTS) byKey.delete(byKey.keys().next().value ?? '');
  byKey.set(key, output as StructuredOutput<unknown>);
  return output;
}

export function judgmentOutput(
  roles: readonly RoleDefinition[],
  candidateNames: readonly string[],
  knowledge: boolean,
  feedback: boolean,
  guidance: readonly string[] = [],
): StructuredOutput<JudgmentOutput> {
  return cachedOutput(
    roles,
    `judgment${knowledge ? '+knowledge' : ''}${feedback ? '+feedback' : ''}\n${candidateNames.join('\n')}\n+guidance:${guidance.join(',')}`,
    () => buildJudgmentSchema(roles, candidateNames, knowledge, feedback, guidance) as z.ZodType<JudgmentOutput>,
  );
}

export function learnedFor(roleId: string, facts: Record<string, unknown>): Facts {
  const prefix = factKey(roleId, '');
  const learned: Facts = {};
  for (const [key, value] of Object.entries(facts)) {
    if (!key.startsWith(prefix) || value === null || value === undefined) continue;
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') learned[key.slice(prefix.length)] = value;
  }
  return learned;
}
