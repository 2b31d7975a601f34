/**
 * The per-turn budget, on a turn that does everything a turn can — switches role, learns facts,
 * calls a tool and proves a fact from it — counted where it is paid: model calls at the model
 * stub, Redis commands on Redis's own MONITOR stream. The documented limits: ≤ 3 model calls
 * before the reply (1 in steady state), ≤ 20 offered tools, ≤ 11 Redis commands on
 * orchestrator state (≤ 7 before the model, 1 read before the judge) — and the same numbers
 * with 30 roles and 2,000 MCP tools as with the real roster; a turn proposing an action and the
 * leg where the customer's Confirm tap runs it stay within the same bounds.
 */
import { beforeAll, describe, expect, test } from '@jest/globals';
import { MAX_OFFERED_TOOLS } from '../../src/tools/offer.js';
import { roster } from '../../roles/index.js';
import { keywordJudge } from '../support/deterministic-model.js';
import { generatedRoster, measureConfirmationLeg, measureProposingTurn, measureTurn as measure, type TurnCost } from '../support/turn-budget.js';

const LIMITS = { modelCallsBeforeReply: 3, offered: 20, redisTotal: 11, redisBeforeModel: 7 } as const;

describe('the per-turn budget', () => {
  let full: TurnCost;
  let large: TurnCost;
  beforeAll(async () => {
    full = await measure({ roles: roster, extraReadTools: 0 });
    large = await measure({ roles: generatedRoster(30), extraReadTools: 2000 });
  }, 60_000);

  test('the measured turn does the expensive things: switches to sales, learns facts, calls a tool, proves a fact', () => {
    for (const cost of [full, large]) {
      expect(cost.roleId).toBe('sales');
      expect(cost.toolCalls).toEqual(['plan_get_pricing']);
      expect(cost.facts).toEqual({ interested_plan: 'Business', team_size: 12, prices_quoted: true });
    }
  });

  test('within the documented limits: one model call before the reply, one Redis read before the judge', () => {
    expect(MAX_OFFERED_TOOLS).toBe(LIMITS.offered);
    expect(full.modelCallsBeforeReply).toBe(1);
    expect(full.reportedModelCalls).toBe(full.modelCallsBeforeReply);
    expect(full.beforeJudge).toEqual(['MGET']);
    expect(full.beforeModel.length).toBeLessThanOrEqual(LIMITS.redisBeforeModel);
    expect(full.total.length).toBeLessThanOrEqual(LIMITS.redisTotal);
    expect(full.offered).toBeLessThanOrEqual(LIMITS.offered);
    // It is not a cheap turn: the role switch, the learned facts and the proved fact all cost
    // (the routed role's stored facts came with the turn-start MGET: no read of their own; a
    // leg that asks the customer nothing stores no decision).
    expect(full.total.length).toBeGreaterThanOrEqual(4);
  });

  test('flat: 30 roles and 2,000 MCP tools cost the same model calls and Redis commands', () => {
    expect(large.modelCallsBeforeReply).toBe(full.modelCallsBeforeReply);
    expect(large.total).toEqual(full.total);
    expect(large.offered).toBeLessThanOrEqual(LIMITS.offered);
    // The reply prompt is the routed role's: identical whatever else the roster holds.
    expect(large.replySystemChars).toBe(full.replySystemChars);
    // The judge's prompt grows with the roster (capped per role) but not with the catalogue.
    expect(large.judgePromptChars).toBeLessThan(16_000);
  });

  test('a degraded turn (the merged judge failing: route fallback, then fact fallback) stays within three model calls and the same Redis budget', async () => {
    const degraded = await measure({
      roles: roster,
      extraReadTools: 0,
      judge: (call) => (call.userText.includes('Business') && call.schema?.properties?.tier ? { error: new Error('model endpoint down') } : keywordJudge(call)),
    });
    expect(degraded.modelCallsBeforeReply).toBe(LIMITS.modelCallsBeforeReply);
    expect(degraded.reportedModelCalls).toBe(degraded.modelCallsBeforeReply);
    expect(degraded.roleId).toBe('sales');
    expect(degraded.beforeModel.length).toBeLessThanOrEqual(LIMITS.redisBeforeModel);
    expect(degraded.total.length).toBeLessThanOrEqual(LIMITS.redisTotal);
  });

  test('a turn that proposes an action stays within the same bounds, the action key counted, nothing run', async () => {
    const proposing = await measureProposingTurn();
    expect(proposing.asked).toBe(true);
    expect(proposing.applied).toBe(0);
    expect(proposing.toolCalls).toEqual(['order_reschedule_delivery']);
    expect(proposing.modelCallsBeforeReply).toBe(1);
    expect(proposing.beforeJudge).toEqual(['MGET']);
    expect(proposing.beforeModel.length).toBeLessThanOrEqual(LIMITS.redisBeforeModel);
    expect(proposing.total.length).toBeLessThanOrEqual(LIMITS.redisTotal);
    expect(proposing.offered).toBeLessThanOrEqual(LIMITS.offered);
  }, 30_000);

  test("the leg where the customer's Confirm tap runs the action: no judge, one model call (the outcome), one MCP call, within the Redis bound", async () => {
    const confirming = await measureConfirmationLeg();
    expect(confirming.applied).toBe(1);
    expect(confirming.mcpCalls).toBe(1);
    expect(confirming.result.text).toContain('The delivery of order 5001 is now on 2026-12-04.');
    // A continuation: nothing judged, the outcome sentence is the only model call.
    expect(confirming.modelCalls).toBe(1);
    expect(confirming.modelCalls).toBeLessThanOrEqual(LIMITS.modelCallsBeforeReply);
    expect(confirming.modelCallsBeforeReply).toBe(0);
    expect(confirming.reportedModelCalls).toBe(confirming.modelCallsBeforeReply);
    // The turn-start MGET, then the action's read and its three compare-and-set steps (confirmed, running, done), the decision stored, the question cleared.
    expect(confirming.total[0]).toBe('MGET');
    expect(confirming.total.length).toBeLessThanOrEqual(LIMITS.redisTotal);
    expect(confirming.offered).toBeLessThanOrEqual(LIMITS.offered);
  }, 30_000);
});
