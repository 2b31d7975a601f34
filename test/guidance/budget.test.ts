/**
 * Guidance keeps the turn's budget: with 200 entries defined (a set publishing accepts), a turn
 * still makes one model call before the reply and the same Redis commands; the judge's prompt
 * grows by no more than its guidance budget and the reply's by no more than the prompt budget.
 */
import { beforeAll, describe, expect, test } from '@jest/globals';
import { roster } from '../../roles/index.js';
import { budgetProblems } from '../../src/guidance/scope.js';
import { guidanceEntries, guidanceHook } from '../support/guidance-entries.js';
import { measureTurn, type TurnCost } from '../support/turn-budget.js';

const BUDGETS = { promptTokens: 1500, judgeTokens: 400 };
/** Four characters a token, as the budgets count them; the preamble and tags come with the section. */
const CHARS = (tokens: number) => tokens * 4;

describe('200 guidance entries', () => {
  const entries = guidanceEntries(200);
  let without: TurnCost;
  let withGuidance: TurnCost;
  beforeAll(async () => {
    without = await measureTurn({ roles: roster, extraReadTools: 0 });
    withGuidance = await measureTurn({ roles: roster, extraReadTools: 0, guidance: guidanceHook(entries) });
  }, 60_000);

  test('are a set publishing accepts', () => {
    expect(
      budgetProblems(
        entries,
        roster.map((role) => role.id),
        BUDGETS,
      ),
    ).toEqual([]);
  });

  test('cost no model call and no Redis command more', () => {
    expect(withGuidance.modelCallsBeforeReply).toBe(1);
    expect(withGuidance.modelCalls).toBe(without.modelCalls);
    expect(withGuidance.total).toEqual(without.total);
    expect(withGuidance.result.guidance?.entries.length).toBeGreaterThan(0);
  });

  test('grow the judge prompt by at most its budget, and the reply by at most the prompt budget', () => {
    const judgeGrowth = withGuidance.judgePromptChars - without.judgePromptChars;
    expect(judgeGrowth).toBeGreaterThan(0);
    expect(judgeGrowth).toBeLessThanOrEqual(CHARS(BUDGETS.judgeTokens));
    expect(withGuidance.replySystemChars - without.replySystemChars).toBeLessThanOrEqual(CHARS(BUDGETS.promptTokens) + 1_000);
  });
});
