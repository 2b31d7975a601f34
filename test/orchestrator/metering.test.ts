/**
 * Per-turn metering at the orchestrator: each model call of a turn (judge, route fallback,
 * reply — streamed or not) is on `TurnResult.usage` with its tier, model and the tokens the
 * model reported; a failed call is timed (outcome `failed`) but costs no tokens.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { keywordJudge } from '../support/deterministic-model.js';
import { createOrchestratorFixture, type OrchestratorFixture } from '../support/orchestrator-fixture.js';

const call = (purpose: 'judge' | 'reply') => ({ purpose, tier: 'fast', model: 'deterministic-fast', inputTokens: 10, outputTokens: 10 });

describe('per-turn metering', () => {
  let fixture: OrchestratorFixture;
  afterEach(() => fixture.close());

  test('a streamed turn carries its judge and reply calls with their tokens', async () => {
    fixture = await createOrchestratorFixture();
    const deltas: string[] = [];
    const result = await fixture.turn(`c-${randomUUID()}`, 'how much is the pro plan?', { onTextDelta: (delta) => deltas.push(delta) });
    expect(deltas.join('')).toBe('Answer to: how much is the pro plan?');
    expect(result.usage).toEqual([call('judge'), call('reply')]);
    expect(fixture.metrics.value('model_tokens_total', { tier: 'fast', model: 'deterministic-fast', kind: 'output' })).toBe(20);
  });

  test('a failed judge call is timed but not metered; the route fallback that answered is', async () => {
    let calls = 0;
    fixture = await createOrchestratorFixture({
      judge: (scripted) => (++calls === 1 ? { error: new Error('model endpoint down') } : keywordJudge(scripted)),
    });
    const result = await fixture.turn(`c-${randomUUID()}`, 'where is my invoice 1042?');
    expect(result).toMatchObject({ roleId: 'bookkeeper', failed: false });
    expect(result.usage).toEqual([call('judge'), call('reply')]);
    const text = await fixture.metrics.render();
    expect(text).toContain('model_call_duration_seconds_count{tier="fast",purpose="judge",outcome="failed"} 1');
    expect(text).toContain('model_call_duration_seconds_count{tier="fast",purpose="judge",outcome="ok"} 1');
  });
});
