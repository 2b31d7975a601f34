/**
 * Every role in the roster passes the same contract: it validates, its scope admits only
 * what its effects allow, its brief follows the four beats, and its hooks never throw on
 * empty input. A new role module gets these checks by being listed in `roles/index.ts`.
 */
import { describe, expect, test } from '@jest/globals';
import { ConfigError } from '../../src/errors/index.js';
import type { Facts, RoleDefinition, ToolCallRecord } from '../../src/contracts/index.js';
import { defineRole, validateRoster } from '../../src/orchestrator/define-role.js';
import { createOrchestrator, type OrchestratorOptions } from '../../src/orchestrator/run-turn.js';
import { toolIsInScope } from '../../src/contracts/tool.js';
import { CHANNEL_TOOL_NAMES } from '../../src/contracts/tool-names.js';
import { roster } from '../../roles/index.js';

function describeRoleContract(role: RoleDefinition) {
  describe(`role ${role.id}`, () => {
    test('declares a description, instructions and a required effects scope', () => {
      expect(role.description.length).toBeGreaterThan(10);
      expect(role.instructions.length).toBeGreaterThan(20);
      expect(Array.isArray(role.toolScope.effects)).toBe(true);
    });

    test('never admits an irreversible tool by scope alone', () => {
      const tool = { name: 'anything_destructive', category: role.toolScope.categories?.[0] ?? 'any', effect: 'irreversible' as const };
      expect(toolIsInScope(tool, role.toolScope)).toBe(false);
    });

    test('its brief has the four beats, with and without a hand-off tool, for identified and anonymous callers', () => {
      for (const capabilityTool of [() => undefined, (capability: string) => (capability === 'handoff' ? 'hand_off_tool' : undefined)]) {
        for (const caller of ['identified', 'anonymous'] as const) {
          const brief = role.buildBrief?.({ facts: {}, caller, capabilityTool });
          if (brief === undefined) continue;
          expect(brief.split('\n').map((line) => line.split(':')[0])).toEqual(['Established', 'This play needs', 'How they are doing', 'Move now']);
        }
      }
    });

    test('its hooks and evidence rules accept empty and error results without throwing', () => {
      const calls: ToolCallRecord[] = [
        { toolName: 'unknown_tool', input: {}, output: undefined, isError: false },
        { toolName: 'invoice_get', input: {}, output: 'Invoice 9 was not found.', isError: true },
      ];
      for (const call of calls) for (const rule of role.evidenceRules ?? []) expect(() => rule(call)).not.toThrow();
      const input = { facts: {}, offeredTools: [], capabilityTool: () => undefined, toolCalls: calls, replyText: '' };
      expect(() => role.hooks?.afterTurn?.(input)).not.toThrow();
      expect(() => role.hooks?.kpi?.({ ...input, roleId: role.id, degraded: false })).not.toThrow();
    });
  });
}

for (const role of roster) describeRoleContract(role);

describe('the roster', () => {
  test('validates, with unique ids', () => {
    expect(() => validateRoster(roster, new Set(CHANNEL_TOOL_NAMES))).not.toThrow();
    expect(() => validateRoster([...roster, roster[0]!], new Set(CHANNEL_TOOL_NAMES))).toThrow('role "support" is declared twice');
  });

  test('a role naming a tool no origin provides fails at start-up, not at the first message', () => {
    // @ts-expect-error a misspelt tool name does not compile
    const role = defineRole({ ...roster[0]!, id: 'typo', toolScope: { effects: ['read'], include: ['book_sales_cal'] } });
    expect(() => validateRoster([role], new Set(['book_sales_call']))).toThrow(new ConfigError('role "typo" names unknown tool "book_sales_cal"'));
  });

  test('a roster past what the judge reads is refused at start-up, naming the role, instead of silently dropped', () => {
    const extra = (index: number) => defineRole({ ...roster[0]!, id: `extra_${String(index).padStart(2, '0')}` });
    const full = [...roster, ...Array.from({ length: 32 - roster.length }, (_, index) => extra(index))];
    expect(() => validateRoster(full, new Set(CHANNEL_TOOL_NAMES))).not.toThrow();
    const over = [...full, extra(99)];
    expect(() => validateRoster(over, new Set(CHANNEL_TOOL_NAMES))).toThrow(
      new ConfigError('role "extra_99" is role 33 of the roster; the judge routes between at most 32'),
    );
    // The orchestrator itself (the CLI builds one without the composition root) refuses it too.
    expect(() => createOrchestrator({ roles: over } as unknown as OrchestratorOptions)).toThrow('role "extra_99" is role 33 of the roster');
  });

  test('a role with more facts than the judge reads is refused, naming the role', () => {
    const facts = Object.fromEntries(Array.from({ length: 7 }, (_, index) => [`fact_${index}`, { question: `Question ${index}?`, type: 'string' as const }]));
    expect(() => defineRole({ ...roster[0]!, id: 'curious', facts })).toThrow(
      new ConfigError('role "curious" declares 7 facts; the judge reads at most 6 per role'),
    );
    // A roster built without defineRole is checked as a whole at start-up.
    const unchecked: RoleDefinition = { ...roster[0]!, id: 'curious', facts };
    expect(() => validateRoster([unchecked], new Set(CHANNEL_TOOL_NAMES))).toThrow('role "curious" declares 7 facts');
  });

  test.each([
    ['an invalid id', { id: 'Bad Id' }, /id must match/],
    ['an empty description', { description: ' ' }, /description is empty/],
    ['an unknown effect', { toolScope: { effects: ['write'] } }, /unknown tool effect "write"/],
  ])('defineRole rejects %s', (_name, change, message) => {
    expect(() => defineRole({ ...roster[0]!, ...change } as RoleDefinition)).toThrow(message);
  });
});

describe('role behaviour', () => {
  const byId = new Map(roster.map((role) => [role.id, role]));

  test('the bookkeeper remembers an invoice it looked up, and asks for the number until it has one', () => {
    const bookkeeper = byId.get('bookkeeper')!;
    const facts = bookkeeper.evidenceRules?.[0]?.({
      toolName: 'invoice_get',
      input: { number: '1042' },
      output: { number: '1042', status: 'overdue', amount: '1250.00' },
      isError: false,
    });
    expect(facts).toEqual({ invoice_number: '1042', invoice_status: 'overdue' });
    expect(bookkeeper.buildBrief?.({ facts: {}, caller: 'identified', capabilityTool: () => undefined })).toContain('Move now: Ask for the invoice number.');
    expect(bookkeeper.buildBrief?.({ facts: facts!, caller: 'identified', capabilityTool: () => undefined })).toContain('invoice 1042, status overdue');
  });

  test('the bookkeeper asks an anonymous caller to identify themselves, whatever facts the judge recorded', () => {
    const bookkeeper = byId.get('bookkeeper')!;
    const brief = bookkeeper.buildBrief?.({ facts: { invoice_number: '1051' }, caller: 'anonymous', capabilityTool: () => 'open_support_chat' });
    expect(brief).toContain('Move now: Ask them to identify themselves');
    expect(brief).toContain('Offer open_support_chat');
    expect(brief).not.toContain('1051');
  });

  test('sales books a call when one is wanted and the channel binds a hand-off tool', () => {
    const sales = byId.get('sales')!;
    const brief = sales.buildBrief?.({ facts: { wants_demo: true }, caller: 'identified', capabilityTool: () => 'book_sales_call' });
    expect(brief).toContain('Move now: Book the call with book_sales_call.');
  });

  test('a hand-off play is marked unavailable after one turn on a channel without the tool', () => {
    const plays: [string, Facts][] = [
      ['sales', { wants_demo: true }],
      ['support', { wants_human: true }],
    ];
    for (const [id, facts] of plays) {
      const role = byId.get(id)!;
      const input = { facts, offeredTools: [], capabilityTool: () => undefined, toolCalls: [], replyText: '' };
      expect(role.hooks?.afterTurn?.(input)).toEqual({ handoffUnavailable: true });
      const brief = role.buildBrief?.({ facts: { ...facts, handoffUnavailable: true }, caller: 'identified', capabilityTool: () => undefined });
      expect(brief).not.toMatch(/with undefined|Book the call with|Hand the conversation to the support team with/);
    }
  });

  test('support records the help article it found', () => {
    const support = byId.get('support')!;
    const facts = support.evidenceRules?.[0]?.({
      toolName: 'help_search_articles',
      input: { query: 'password' },
      output: 'Resetting your password\nUse the "Forgot password" link…',
      isError: false,
    });
    expect(facts).toEqual({ article_suggested: 'Resetting your password' });
  });
});
