/**
 * The per-turn budget, counted on real Redis (its MONITOR stream) and the model's call log:
 * ≤ 3 model calls before the reply (1 in steady state), ≤ 20 offered tools, ≤ 11 Redis
 * commands on orchestrator state (≤ 7 before the model, 2 reads before the judge in steady
 * state) — and the same numbers with 30 roles and 2,000 MCP tools as with the real roster.
 */
import { beforeAll, describe, expect, test } from '@jest/globals';
import { MAX_OFFERED_TOOLS } from '../../src/tools/offer.js';
import { roster } from '../../roles/index.js';
import { keywordJudge } from '../support/deterministic-model.js';
import { generatedRoster, measureTurn as measure, type TurnCost } from '../support/turn-budget.js';

describe('the per-turn budget', () => {
  let steady: TurnCost;
  let large: TurnCost;
  beforeAll(async () => {
    steady = await measure({ roles: roster, extraReadTools: 0 });
    large = await measure({ roles: generatedRoster(30), extraReadTools: 2000 });
  }, 60_000);

  test('steady state: one model call before the reply, two Redis reads before the judge', () => {
    expect(steady.modelCallsBeforeReply).toBe(1);
    expect(steady.beforeJudge).toEqual(['MGET', 'GET']);
    expect(steady.beforeModel.length).toBeLessThanOrEqual(7);
    expect(steady.total.length).toBeLessThanOrEqual(11);
    expect(steady.offered).toBeLessThanOrEqual(MAX_OFFERED_TOOLS);
  });

  test('flat: 30 roles and 2,000 MCP tools cost the same model calls and Redis commands', () => {
    expect(large.modelCallsBeforeReply).toBe(steady.modelCallsBeforeReply);
    expect(large.total).toEqual(steady.total);
    expect(large.offered).toBeLessThanOrEqual(MAX_OFFERED_TOOLS);
    // The reply prompt is the routed role's: identical whatever else the roster holds.
    expect(large.replySystemChars).toBe(steady.replySystemChars);
    // The judge's prompt grows with the roster (capped per role) but not with the catalogue.
    expect(large.judgePromptChars).toBeLessThan(16_000);
  });

  test('a degraded turn (judge and fallback both failing) stays within three model calls and the same Redis budget', async () => {
    let failing = false;
    const degraded = await measure({
      roles: roster,
      extraReadTools: 0,
      judge: (call) => {
        if (call.options.prompt.some((message) => message.role === 'user' && JSON.stringify(message.content).includes('Business'))) failing = true;
        return failing && !call.schema?.properties?.team_size ? { error: new Error('model endpoint down') } : keywordJudge(call);
      },
    });
    expect(degraded.modelCallsBeforeReply).toBeLessThanOrEqual(3);
    expect(degraded.beforeModel.length).toBeLessThanOrEqual(7);
    expect(degraded.total.length).toBeLessThanOrEqual(11);
  });
});
