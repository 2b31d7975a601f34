/**
 * The binding is the orchestrator's, whatever the channel: any channel whose `identify` names a
 * contact (as the web channel's will for a website-verified visitor) gets select_entity among
 * that contact's entities and reads bound to the one selected — within the same leg — and a
 * channel without `identify` is anonymous, on the streaming path too. Runs the real orchestrator
 * on Redis against the real test MCP server through the production MCP tool source.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from '@jest/globals';
import { createCliChannel } from '../../channels/cli/index.js';
import type { ChannelDefinition } from '../../src/contracts/index.js';
import type { LinkedCustomer } from '../../src/tools/select-entity.js';
import { createSelectEntityTool } from '../../src/tools/select-entity.js';
import { connectBusinessMcp } from '../support/business-mcp.js';
import type { Script, ScriptedReply } from '../support/deterministic-model.js';
import { NOT_ACME_MARKERS } from '../support/mcp-server.js';
import { createOrchestratorFixture, type OrchestratorFixture } from '../support/orchestrator-fixture.js';

type ToolCalls = Extract<ScriptedReply, { toolCalls: unknown }>['toolCalls'];

const STEPS: Record<string, ToolCalls[]> = {
  'customer-id': [
    [
      { name: 'invoice_list', input: { customerId: 'CUST-BOREALIS' } },
      { name: 'account_get_status', input: { accountId: 'HL-3001' } },
    ],
  ],
  'select-iberia': [[{ name: 'select_entity', input: { hint: 'Acme Iberia' } }], [{ name: 'account_get_status', input: {} }]],
  'select-foreign': [[{ name: 'select_entity', input: { hint: 'Borealis Bakery' } }]],
  select: [[{ name: 'select_entity', input: {} }]],
  account: [[{ name: 'account_get_status', input: {} }]],
};

const script: Script = ({ userText, toolResults }) => {
  let answered = toolResults.length;
  for (const step of STEPS[userText.match(/trick:([a-z-]+)/)?.[1] ?? ''] ?? []) {
    if (answered === 0) return { toolCalls: step };
    answered -= step.length;
  }
  return { text: `Tools said: ${toolResults.map((result) => JSON.stringify(result.output)).join(' | ')}` };
};

const luis: LinkedCustomer = {
  name: 'Luis Gómez',
  customerId: 'CUST-ACME',
  entities: [
    { id: 'HL-2001', name: 'Acme Ltd' },
    { id: 'HL-2002', name: 'Acme Iberia SL' },
  ],
};

let mcp: Awaited<ReturnType<typeof connectBusinessMcp>>;
beforeAll(async () => {
  mcp = await connectBusinessMcp();
});
afterAll(() => mcp.close());
beforeEach(() => {
  mcp.server.calls.splice(0);
});

describe('a channel without identify', () => {
  let fixture: OrchestratorFixture;
  beforeAll(async () => {
    fixture = await createOrchestratorFixture({ mcpTools: () => mcp.source.tools(), script });
  });
  afterAll(() => fixture.close());

  test('is anonymous: no customer-data read is offered, and a streamed leg refuses and counts the calls by name', async () => {
    const deltas: string[] = [];
    const result = await fixture.turn(`cli:anonymous-${Date.now()}`, 'my invoices trick:customer-id', { onTextDelta: (delta) => deltas.push(delta) });
    expect(result.roleId).toBe('bookkeeper');
    expect(result.offeredTools.filter((name) => /^(invoice|account)_/.test(name))).toEqual([]);
    expect(result.toolCalls.map((call) => [call.toolName, call.isError])).toEqual([
      ['invoice_list', true],
      ['account_get_status', true],
    ]);
    expect(fixture.metrics.value('tool_scope_denied_total', { reason: 'unoffered-tool', channel: 'cli' })).toBe(2);
    expect(mcp.server.calls).toEqual([]);
    expect(deltas.join('')).toBe(result.text);
    for (const marker of NOT_ACME_MARKERS) expect(fixture.models.calls.map((call) => call.promptText).join('\n')).not.toContain(marker);
  });
});

describe('a channel whose identify fails', () => {
  test('fails the turn (the queue retries it) instead of answering as an anonymous caller', async () => {
    const channel: ChannelDefinition = {
      ...createCliChannel({ write: () => undefined }),
      identify: () => Promise.reject(new Error('contact store unavailable')),
    };
    const fixture = await createOrchestratorFixture({ mcpTools: () => mcp.source.tools(), script, channel });
    try {
      await expect(fixture.turn(`cli:identify-down-${Date.now()}`, 'my invoices trick:account')).rejects.toThrow('contact store unavailable');
      expect(fixture.models.calls).toEqual([]);
      expect(mcp.server.calls).toEqual([]);
    } finally {
      await fixture.close();
    }
  });
});

describe('a channel whose identify names a contact with two companies', () => {
  let fixture: OrchestratorFixture;
  let identified = 0;
  beforeAll(async () => {
    const channel: ChannelDefinition = {
      ...createCliChannel({ write: () => undefined }),
      tools: [createSelectEntityTool()],
      identify: async () => {
        identified += 1;
        return luis;
      },
    };
    fixture = await createOrchestratorFixture({ mcpTools: () => mcp.source.tools(), script, channel });
  });
  afterAll(() => fixture.close());

  test('select_entity offers only their own companies, whatever the model names', async () => {
    const result = await fixture.turn(`cli:foreign-${Date.now()}`, 'invoice trick:select-foreign');
    expect(result.text).toBe('Which company is this about?\n1. Acme Ltd\n2. Acme Iberia SL\nReply with the number or the name.');
    expect(mcp.server.calls).toEqual([]);
  });

  test("the question follows the channel's language when the model names none, and is asked again in it", async () => {
    const conversation = `cli:french-${Date.now()}`;
    const asked = await fixture.turn(conversation, 'invoice trick:select', { metadata: { language: 'fr' } });
    expect(asked.text).toBe("De quelle entreprise s'agit-il ?\n1. Acme Ltd\n2. Acme Iberia SL\nRépondez avec le numéro ou le nom.");
    expect(asked.choicesLanguage).toBe('fr');
    // The answer's own message says nothing of a language: the question's is kept.
    const again = await fixture.turn(conversation, 'banane', { firstTurn: false });
    expect(again.text).toBe("Désolé, je n'ai pas compris laquelle. Répondez avec un numéro de 1 à 2, ou le nom de l'entreprise.");
    expect(again.choicesLanguage).toBe('fr');
  });

  test('a read after select_entity in the same leg is bound to the entity just selected, and stays bound next turn', async () => {
    const conversation = `cli:iberia-${Date.now()}`;
    const before = identified;
    await fixture.turn(conversation, 'invoice trick:select-iberia');
    expect(identified - before).toBe(1);
    await fixture.turn(conversation, 'invoice again trick:account');
    expect(identified - before).toBe(2);
    const caller = { 'wa-assistant/caller': { verified: true, customerId: 'CUST-ACME', entityId: 'HL-2002' } };
    expect(mcp.server.calls).toEqual([
      { name: 'account_get_status', arguments: { accountId: 'HL-2002' }, meta: caller },
      { name: 'account_get_status', arguments: { accountId: 'HL-2002' }, meta: caller },
    ]);
  });

  test("another customer's id or account is refused and counted, on any channel", async () => {
    const result = await fixture.turn(`cli:foreign-ids-${Date.now()}`, 'invoice trick:customer-id');
    expect(result.toolCalls.every((call) => call.isError)).toBe(true);
    expect(fixture.metrics.value('tool_scope_denied_total', { reason: 'scoped-argument', channel: 'cli' })).toBe(1);
    expect(fixture.metrics.value('tool_scope_denied_total', { reason: 'entity-not-held', channel: 'cli' })).toBe(1);
    expect(mcp.server.calls).toEqual([]);
  });
});
