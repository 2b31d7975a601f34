/**
 * The judge's paths as a customer would feel them: routed to the right role, degraded to the
 * route fallback, failed closed (still answered, with the out-of-scope note), and skipped
 * while its circuit breaker is open — with the model calls each path costs.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import { createCircuitBreaker } from '../../src/orchestrator/circuit-breaker.js';
import { OUT_OF_SCOPE_NOTE } from '../../src/orchestrator/system-prompt.js';
import type { AssistantTool } from '../../src/contracts/tool.js';
import { keywordJudge, type Script } from '../support/deterministic-model.js';
import { createOrchestratorFixture, type OrchestratorFixture } from '../support/orchestrator-fixture.js';

const failing: Script = () => ({ error: new Error('judge endpoint down') });
let fixture: OrchestratorFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

const conversation = () => `cli:judge-${Math.random().toString(36).slice(2)}`;
const structuredCalls = (f: OrchestratorFixture) => f.models.calls.filter((call) => call.structured);

describe('routing', () => {
  test.each([
    ['where is my invoice 1042?', 'bookkeeper'],
    ['how much is the Pro plan?', 'sales'],
    ["the app won't let me log in", 'support'],
  ])('"%s" is answered by %s with one judge call', async (text, role) => {
    fixture = await createOrchestratorFixture();
    const result = await fixture.turn(conversation(), text);
    expect(result.roleId).toBe(role);
    expect(result.modelCalls).toBe(1);
    expect(structuredCalls(fixture)).toHaveLength(1);
    expect(fixture.models.replyCalls()[0]?.system).not.toContain(OUT_OF_SCOPE_NOTE);
  });

  test('"what\'s the weather?" is answered politely with the out-of-scope note', async () => {
    fixture = await createOrchestratorFixture();
    const result = await fixture.turn(conversation(), "what's the weather in Madrid?");
    expect(result.failed).toBe(false);
    expect(fixture.models.replyCalls()[0]?.system).toContain(OUT_OF_SCOPE_NOTE);
  });

  test('the judge prompt names every role, its fact questions and the current role', async () => {
    fixture = await createOrchestratorFixture();
    const id = conversation();
    await fixture.turn(id, 'how much is the Pro plan?');
    await fixture.turn(id, 'and for a team of 12?');
    const [, second] = structuredCalls(fixture);
    expect(second?.system).toContain('role.sales.team_size');
    expect(second?.system).toContain('role.bookkeeper.invoice_number');
    expect(second?.userText).toContain('Current role: sales.');
  });
});

describe('the judgment schema', () => {
  const catalogue: AssistantTool[] = ['invoice', 'catalog'].flatMap((category) =>
    Array.from({ length: 35 }, (_, index) => ({
      name: `${category}_${index}_lookup`,
      description: `Looks up ${category} ${index}`,
      origin: 'mcp' as const,
      category,
      effect: 'read' as const,
      inputSchema: { jsonSchema: { type: 'object' } },
      execute: async () => null,
    })),
  );

  test("lists each turn's own shortlist: a pick from an earlier turn's list is refused on a later turn", async () => {
    // The judge always ranks an invoice tool: valid while invoices are shortlisted, not after.
    const judge: Script = (call) => {
      const reply = keywordJudge(call);
      return 'text' in reply ? { text: JSON.stringify({ ...(JSON.parse(reply.text) as object), rankedTools: ['invoice_1_lookup'] }) } : reply;
    };
    fixture = await createOrchestratorFixture({ mcpTools: () => catalogue, judge });
    await fixture.turn(conversation(), 'my invoice lookup please');
    await fixture.turn(conversation(), 'a catalog lookup please');
    const [first, second] = structuredCalls(fixture);
    const ranked = (call: typeof first) => (call?.schema?.properties?.rankedTools?.items?.enum ?? []) as string[];
    expect(ranked(first)).toContain('invoice_1_lookup');
    expect(ranked(second)).toContain('catalog_1_lookup');
    expect(ranked(second)).not.toContain('invoice_1_lookup');
    expect(fixture.metrics.value('judge_calls_total', { outcome: 'ok' })).toBe(1);
    expect(fixture.metrics.value('judge_calls_total', { outcome: 'failed' })).toBe(1);
  });
});

describe('degraded paths', () => {
  test('a failed judge falls back to one route-only call; the turn is answered', async () => {
    let calls = 0;
    fixture = await createOrchestratorFixture({
      judge: (call) => (++calls === 1 ? failing(call) : keywordJudge(call)),
    });
    const result = await fixture.turn(conversation(), 'how much is the Pro plan?');
    expect(result).toMatchObject({ roleId: 'sales', failed: false });
    // Judge, route fallback, then sales's own fact extraction (it registers one).
    expect(result.modelCalls).toBe(3);
    const [, fallback, extraction] = structuredCalls(fixture);
    expect(Object.keys(fallback?.schema?.properties ?? {}).sort()).toEqual(['inScope', 'route']);
    expect(Object.keys(extraction?.schema?.properties ?? {})).toContain('team_size');
    expect(fixture.logs).toContainEqual(expect.objectContaining({ event: 'judge-failed' }));
  });

  test('a role without a fact extractor costs two calls on a degraded turn', async () => {
    let calls = 0;
    fixture = await createOrchestratorFixture({ judge: (call) => (++calls === 1 ? failing(call) : keywordJudge(call)) });
    const result = await fixture.turn(conversation(), 'where is my invoice 1042?');
    expect(result).toMatchObject({ roleId: 'bookkeeper', modelCalls: 2 });
  });

  test('when both calls fail the turn fails closed: previous role, out-of-scope note, still answered', async () => {
    fixture = await createOrchestratorFixture();
    const id = conversation();
    await fixture.turn(id, 'how much is the Pro plan?');
    fixture.models.setJudge(failing);
    const result = await fixture.turn(id, 'and the Business one?');
    expect(result).toMatchObject({ roleId: 'sales', failed: false, text: 'Answer to: and the Business one?' });
    expect(fixture.models.replyCalls().at(-1)?.system).toContain(OUT_OF_SCOPE_NOTE);
    expect(fixture.logs).toContainEqual(expect.objectContaining({ event: 'route-fallback-failed' }));
  });

  test.each([
    ['invalid JSON', { text: '{"route": "sales", ' }],
    ['a schema mismatch', { text: JSON.stringify({ route: 'sales', tier: 'extreme' }) }],
    ['an unknown role', { text: JSON.stringify({ route: 'astrologer', tier: 'fast', bundle: 'general', inScope: true, rankedTools: [], facts: {} }) }],
  ])('%s from the judge is a failure like any other, never a crash', async (_name, reply) => {
    let calls = 0;
    fixture = await createOrchestratorFixture({ judge: (call) => (++calls === 1 ? reply : keywordJudge(call)) });
    const result = await fixture.turn(conversation(), 'where is my invoice 1042?');
    expect(result).toMatchObject({ roleId: 'bookkeeper', failed: false });
    expect(fixture.metrics.value('judge_calls_total', { outcome: 'failed' })).toBe(1);
  });
});

describe('circuit breaker', () => {
  test('opens after repeated failures (judge skipped), half-opens after the cooldown, closes on success', async () => {
    let judgeUp = false;
    // The breaker's clock is the test's: the cooldown passes when the test says so, not by sleeping.
    let clock = Date.now();
    fixture = await createOrchestratorFixture({
      judgeBreaker: { threshold: 2, cooldownMs: 300, now: () => clock },
      judge: (call) => {
        const isMerged = Boolean(call.schema?.properties?.tier);
        return isMerged && !judgeUp ? failing(call) : keywordJudge(call);
      },
    });
    const id = conversation();
    const mergedCalls = () => structuredCalls(fixture!).filter((call) => call.schema?.properties?.tier).length;
    await fixture.turn(id, 'where is my invoice 1042?');
    await fixture.turn(id, 'and invoice 1043?');
    expect(mergedCalls()).toBe(2);
    // Open: the merged call is skipped, only the route fallback runs.
    const skipped = await fixture.turn(id, 'and invoice 1051?');
    expect(mergedCalls()).toBe(2);
    expect(skipped.modelCalls).toBe(1);
    expect(fixture.metrics.value('judge_calls_total', { outcome: 'skipped' })).toBe(1);
    // Half-open after the cooldown: one trial call, which succeeds and closes the breaker.
    clock += 350;
    judgeUp = true;
    await fixture.turn(id, 'thanks, and my balance?');
    expect(mergedCalls()).toBe(3);
    await fixture.turn(id, 'ok');
    expect(mergedCalls()).toBe(4);
  });

  test('a failed half-open trial reopens it', () => {
    let now = 0;
    const breaker = createCircuitBreaker({ threshold: 1, cooldownMs: 100, now: () => now });
    breaker.failed();
    expect(breaker.allow()).toBe(false);
    now = 150;
    expect(breaker.state()).toBe('half-open');
    expect(breaker.allow()).toBe(true);
    expect(breaker.allow()).toBe(false);
    breaker.failed();
    expect(breaker.state()).toBe('open');
    now = 300;
    expect(breaker.allow()).toBe(true);
    breaker.succeeded();
    expect(breaker.state()).toBe('closed');
  });
});
