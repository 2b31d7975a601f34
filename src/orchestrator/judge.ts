/**
 * Step 2 of a fresh turn: one merged structured-output call decides, for the whole roster, who
 * answers (route), how hard to think (tier), whether the request is in scope, which
 * shortlisted tools matter, and every role's facts (namespaced `role.<id>.<key>`); the roster is
 * held within JUDGE_LIMITS at start-up (`validateRoster`), so nothing is dropped here. When it
 * fails — or its circuit breaker is open — one cheaper call decides only route and scope; when
 * that fails too the turn fails closed (out of scope, previous role kept) but is still answered. Malformed output is a failure
 * like any other. A degraded turn may run the routed role's fact extraction once. This module
 * owns the turn's judgment; its contract is `judge-types.ts`, its output schema
 * `judge-schema.ts`, its prompt `judge-prompt.ts` and its model calls `judge-calls.ts`.
 */
import { ConfigError } from '../errors/index.js';
import { logWhileOut, routeFallback, structured } from './judge-calls.js';
import { judgePrompt } from './judge-prompt.js';
import { judgmentOutput, learnedFor } from './judge-schema.js';
import type { JudgeDependencies, JudgeInput, Judgment } from './judge-types.js';

export { extractFacts } from './judge-calls.js';
export { JUDGE_LIMITS, type JudgeDependencies, type ToolCandidate } from './judge-types.js';

/** The role a turn falls back to: the roster's first (`checkRosterLimits` refuses an empty roster at start-up). */
export function defaultRole<Role extends { id: string }>(roles: Iterable<Role>): Role {
  for (const role of roles) return role;
  throw new ConfigError('the roster is empty');
}

export async function judgeTurn(dependencies: JudgeDependencies, input: JudgeInput): Promise<Judgment> {
  const { metrics, breaker } = dependencies;
  const roles = input.roles;
  const known = new Set(roles.map((role) => role.id));
  const previous = input.activeRoleId && known.has(input.activeRoleId) ? input.activeRoleId : defaultRole(roles).id;
  let modelCalls = 0;

  if (breaker.allow()) {
    modelCalls += 1;
    try {
      const { system, prompt } = judgePrompt(input);
      const schema = judgmentOutput(
        roles,
        input.candidates.map((tool) => tool.name),
        input.knowledge === true,
        input.feedback === true,
        (input.guidance ?? []).map((entry) => entry.id),
      );
      const output = await structured(dependencies, schema, system, prompt, input.signal);
      breaker.succeeded();
      metrics.increment('judge_calls_total', { outcome: 'ok' });
      return {
        roleId: output.route,
        tier: output.tier,
        inScope: output.inScope,
        rankedTools: output.rankedTools,
        learned: learnedFor(output.route, output.facts),
        ...(output.knowledge ? { knowledge: output.knowledge } : {}),
        ...(output.feedbackOnly !== undefined ? { feedbackOnly: output.feedbackOnly } : {}),
        ...(output.guidance ? { guidance: output.guidance } : {}),
        degraded: false,
        modelCalls,
      };
    } catch (error) {
      if (input.signal.aborted) throw error;
      breaker.failed();
      metrics.increment('judge_calls_total', { outcome: 'failed' });
      logWhileOut(dependencies, 'judge-failed', { error, breaker: breaker.state() });
    }
  } else {
    metrics.increment('judge_calls_total', { outcome: 'skipped' });
    logWhileOut(dependencies, 'judge-skipped', { breaker: breaker.state() });
  }

  modelCalls += 1;
  try {
    const output = await routeFallback(dependencies, input);
    metrics.increment('route_fallback_total', { outcome: 'ok' });
    return {
      roleId: output.route,
      tier: 'fast',
      inScope: output.inScope,
      rankedTools: [],
      learned: {},
      degraded: true,
      modelCalls,
    };
  } catch (error) {
    if (input.signal.aborted) throw error;
    metrics.increment('route_fallback_total', { outcome: 'failed' });
    logWhileOut(dependencies, 'route-fallback-failed', { error });
    return {
      roleId: previous,
      tier: 'fast',
      inScope: false,
      rankedTools: [],
      learned: {},
      degraded: true,
      modelCalls,
    };
  }
}
