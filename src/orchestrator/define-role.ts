/**
 * Declares a role. Validation runs when the module loads, so a broken role stops start-up
 * instead of failing at a customer's first message.
 */
import { ConfigError } from '../errors/index.js';
import { TOOL_EFFECTS } from '../contracts/tool.js';
import type { RoleDefinition } from '../contracts/index.js';
import { JUDGE_LIMITS } from './judge.js';

const ROLE_ID = /^[a-z][a-z0-9_]{1,31}$/;
const FACT_KEY = /^[a-z][a-zA-Z0-9_]{0,47}$/;

export function defineRole<const Role extends RoleDefinition>(role: Role): Role {
  const where = `role "${role.id}"`;
  if (!ROLE_ID.test(role.id)) throw new ConfigError(`${where}: id must match ${ROLE_ID}`);
  if (!role.description.trim()) throw new ConfigError(`${where}: description is empty`);
  if (!role.instructions.trim()) throw new ConfigError(`${where}: instructions are empty`);
  for (const effect of role.toolScope.effects) {
    if (!TOOL_EFFECTS.includes(effect)) throw new ConfigError(`${where}: unknown tool effect "${effect}"`);
  }
  for (const key of Object.keys(role.facts ?? {})) {
    if (!FACT_KEY.test(key)) throw new ConfigError(`${where}: fact key "${key}" must match ${FACT_KEY}`);
  }
  checkJudgeLimits(role);
  return Object.freeze(role);
}

/** The judge asks about every fact of every role in one bounded prompt: more is refused, never dropped. */
function checkJudgeLimits(role: RoleDefinition, position?: number): void {
  const facts = Object.keys(role.facts ?? {}).length;
  if (facts > JUDGE_LIMITS.factsPerRole) {
    throw new ConfigError(`role "${role.id}" declares ${facts} facts; the judge reads at most ${JUDGE_LIMITS.factsPerRole} per role`);
  }
  if (position !== undefined && position >= JUDGE_LIMITS.roles) {
    throw new ConfigError(`role "${role.id}" is role ${position + 1} of the roster; the judge routes between at most ${JUDGE_LIMITS.roles}`);
  }
}

/** What the orchestrator needs of any roster: not empty, within what the judge can read. */
export function checkRosterLimits(roles: readonly RoleDefinition[]): void {
  if (roles.length === 0) throw new ConfigError('the roster is empty');
  roles.forEach((role, position) => checkJudgeLimits(role, position));
}

/** Checks a roster as a whole: unique ids, every named tool known to some origin, within the judge's limits. */
export function validateRoster(roles: readonly RoleDefinition[], knownToolNames: ReadonlySet<string>): void {
  const seen = new Set<string>();
  for (const role of roles) {
    if (seen.has(role.id)) throw new ConfigError(`role "${role.id}" is declared twice`);
    seen.add(role.id);
    const named = [...(role.toolScope.include ?? []), ...(role.toolScope.exclude ?? []), ...(role.alwaysOffered ?? [])];
    for (const name of named) {
      if (!knownToolNames.has(name)) throw new ConfigError(`role "${role.id}" names unknown tool "${name}"`);
    }
  }
  checkRosterLimits(roles);
}
