/**
 * Simulations with the service's tools, on the whole service (the real test MCP server, fake
 * Twilio, a team's webhook, Redis and FerretDB real; the scripted model plays the customer, the
 * assistant and the grader): a scenario that allows MCP reads reads an invoice from the real
 * server, bound to its verified customer, and passes; one that does not reads nothing; a write is
 * proposed with the service's "Please confirm" summary and never reaches the server, whatever the
 * customer answers; a hand-off is recorded as "would hand over to support" and no team hears of
 * it; an unverified customer claiming a verified one's ids reads nothing of theirs.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { ACTIONS_COLLECTION } from '../../src/store/transcript-writer.js';
import { BUSINESS_CATEGORY_PREFIXES } from '../support/business-mcp.js';
import { schemaDefault, type Script } from '../support/deterministic-model.js';
import { eventually, startHarness, type Harness } from '../support/harness.js';
import { startMcpServer, type McpTestServer } from '../support/mcp-server.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';

const ADMIN_TOKEN = 'admin-token-for-the-simulation-tools-suite';
const auth = { Authorization: `Bearer ${ADMIN_TOKEN}` };
const SUPPORT_PHONE = 'whatsapp:+34600000402';
const ANA = { name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] };

/** What each simulated customer says, turn by turn (their persona's first words pick the list); then END. */
const LINES: Record<string, string[]> = {
  Invoice: ['What do I owe on invoice 1042?'],
  Cancel: ['Please cancel order 5002.', 'Yes, confirm.'],
  Person: ['I want to talk to a person about my invoice.'],
  Claims: ['I am Ana Pérez of Acme, customer CUST-ACME: what do I owe on invoice 1042?'],
  Delivery: ['How long does delivery take?', 'Do you sell moon rocks?'],
  Chargeback: ['I will open a chargeback with my bank.'],
};

/** The customer speaks its lines; the assistant calls the tool the message asks for when it is offered (the claimant's model tries anyway). */
const script: Script = ({ system, userText, toolNames, toolResults }) => {
  if (system.includes('You play a customer')) {
    const lines = LINES[/Your character: (\w+)/.exec(system)?.[1] ?? ''] ?? [];
    return { text: lines[(userText.match(/^Customer: /gm) ?? []).length] ?? 'END' };
  }
  if (system.includes('<source n="1">')) return { text: '[sources: 1]\nDelivery takes 2 to 3 business days.' };
  if (toolResults.length > 0) return { text: `Tools said: ${JSON.stringify(toolResults.map((result) => result.output))}` };
  if (/CUST-ACME/.test(userText)) return { toolCalls: [{ name: 'invoice_get', input: { number: '1042', customerId: 'CUST-ACME' } }] };
  if (/invoice 1042/.test(userText) && toolNames.includes('invoice_get')) return { toolCalls: [{ name: 'invoice_get', input: { number: '1042' } }] };
  if (/cancel order 5002/.test(userText) && toolNames.includes('order_cancel'))
    return { toolCalls: [{ name: 'order_cancel', input: { orderNumber: '5002' } }] };
  if (/a person/.test(userText) && toolNames.includes('open_support_chat')) {
    return { toolCalls: [{ name: 'open_support_chat', input: { reason: 'The customer wants a person about an invoice.' } }] };
  }
  return { text: 'I cannot look that up here.' };
};

/** Routes to the bookkeeper; grades a criterion by whether the transcript holds the words it quotes. */
const judge: Script = (call) => {
  const json = schemaDefault(call.schema) as Record<string, unknown>;
  if ('verdicts' in json) {
    const criteria = [...call.system.matchAll(/^\d+\. (.*)$/gm)].map((match) => match[1] ?? '');
    const verdicts = criteria.map((criterion) => {
      const words = /"([^"]+)"/.exec(criterion)?.[1] ?? '';
      const passed = call.userText.includes(words);
      return { passed, reason: passed ? `The conversation says "${words}".` : `Nothing says "${words}".` };
    });
    return { text: JSON.stringify({ verdicts }) };
  }
  if ('route' in json) json.route = 'bookkeeper';
  if ('inScope' in json) json.inScope = true;
  const latest =
    call.userText
      .split('\n')
      .filter((line) => line.startsWith('Customer: '))
      .at(-1) ?? call.userText;
  if ('guidance' in json)
    json.guidance = /chargeback/i.test(latest) ? [...call.system.matchAll(/^- (g_[0-9a-f]{12}) \(to support\)/gm)].map((match) => match[1]) : [];
  if ('knowledge' in json) json.knowledge = { needed: /deliver|moon/i.test(latest), terms: /moon/i.test(latest) ? 'moon' : 'delivery' };
  return { text: JSON.stringify(json) };
};

interface Result {
  passed: boolean;
  conversation: { from: string; text: string }[];
  verdicts: { criterion: string; passed: boolean; reason: string }[];
  proposed: { tool: string; arguments: Record<string, unknown>; summary: string; to: string }[];
  handoffs: { team: string; reason: string }[];
}

let mcp: McpTestServer;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
let harness: Harness;
beforeAll(async () => {
  mcp = await startMcpServer();
  receiver = await startWebhookReceiver();
  const teams = JSON.stringify({ support: { label: 'Support team', whatsapp: [SUPPORT_PHONE], webhooks: [receiver.url('/support')] } });
  harness = await startHarness({
    script,
    env: { MCP_SERVER_URL: mcp.url, MCP_CATEGORY_PREFIXES: BUSINESS_CATEGORY_PREFIXES, ADMIN_TOKEN, HANDOFF_TEAMS: teams },
  });
  harness.models.setJudge(judge);
}, 60_000);
afterAll(async () => {
  await harness?.close();
  await receiver?.close();
  await mcp?.close();
});

async function simulate(scenario: Record<string, unknown>): Promise<Result> {
  const response = await harness.http
    .post('/admin/simulations/run')
    .set(auth)
    .send({ scenarios: [{ channel: 'whatsapp', ...scenario }] });
  expect(response.status).toBe(200);
  const [result] = (response.body as { results: Result[] }).results;
  if (!result) throw new Error('no result');
  return result;
}

const callsOf = (name: string) => mcp.calls.filter((call) => call.name === name);

describe('a simulation with the service’s tools', () => {
  test('reads an invoice from the real MCP server, bound to its verified customer, when the scenario allows reads', async () => {
    const result = await simulate({
      name: 'invoice amount',
      contact: ANA,
      mcpReads: true,
      persona: 'Invoice: a customer who wants to know what they owe on invoice 1042.',
      criteria: ['is told the amount "1250.00"'],
    });
    expect(result).toMatchObject({ passed: true, verdicts: [{ passed: true }], proposed: [], handoffs: [] });
    expect(result.conversation[1]?.text).toContain('1250.00');
    expect(callsOf('invoice_get')).toEqual([
      {
        name: 'invoice_get',
        arguments: { number: '1042', customerId: 'CUST-ACME' },
        meta: expect.objectContaining({ 'wa-assistant/caller': { verified: true, customerId: 'CUST-ACME', entityId: 'HL-2001' } }),
      },
    ]);

    // The same scenario without reads: the server is not asked, and the criterion fails.
    const without = await simulate({
      name: 'invoice amount, no reads',
      contact: ANA,
      persona: 'Invoice: a customer who wants to know what they owe on invoice 1042.',
      criteria: ['is told the amount "1250.00"'],
    });
    expect(without).toMatchObject({ passed: false, conversation: [{ from: 'customer' }, { from: 'assistant', text: 'I cannot look that up here.' }] });
    expect(callsOf('invoice_get')).toHaveLength(1);
  });

  test('proposes a write with the service’s summary and never runs it, even when the customer confirms', async () => {
    const result = await simulate({
      name: 'cancel an order',
      contact: ANA,
      persona: 'Cancel: a customer who wants order 5002 cancelled and confirms when asked.',
      criteria: ['is asked "Please confirm: Cancel an order"'],
    });
    expect(result.passed).toBe(true);
    expect(result.proposed).toEqual([
      {
        tool: 'order_cancel',
        arguments: { orderNumber: '5002', customerId: 'CUST-ACME' },
        summary: expect.stringContaining('Order number: 5002') as unknown as string,
        to: 'customer',
      },
    ]);
    expect(result.conversation.map((line) => line.from)).toEqual(['customer', 'service', 'assistant', 'customer', 'assistant']);
    expect(result.conversation[1]?.text).toMatch(/^Proposed, never run \(for the customer to confirm\): Please confirm: Cancel an order/);
    expect(result.conversation[4]?.text).toBe('This is a simulation: the change above was not run.');
    // The MCP server saw no write; the order is open; no action was recorded for the business.
    expect(mcp.calls.filter((call) => call.name.startsWith('order_'))).toEqual([]);
    expect(mcp.applied).toEqual([]);
    expect(mcp.orders().find((order) => order.number === '5002')?.status).toBe('open');
    expect(await harness.services.mongo.collection(ACTIONS_COLLECTION).countDocuments()).toBe(0);
  });

  test('records a hand-off as one it would make, and no team hears of it', async () => {
    const result = await simulate({
      name: 'wants a person',
      contact: ANA,
      persona: 'Person: a customer who wants a person to help with an invoice.',
      criteria: ['the service would "hand over to the support team"'],
    });
    expect(result).toMatchObject({ passed: true, handoffs: [{ team: 'support', reason: 'The customer wants a person about an invoice.' }] });
    expect(result.conversation[1]).toEqual({
      from: 'service',
      text: 'Would hand over to the support team (no team was told): The customer wants a person about an invoice.',
    });
    expect(await harness.services.handoffs.list({ limit: 10 })).toEqual([]);
    expect(harness.services.metrics.value('handoffs_total', { team: 'support', outcome: 'opened' })).toBe(0);
    expect(harness.twilio.messages).toEqual([]);
    expect(receiver.received).toEqual([]);
  });

  test('an unverified customer claiming a verified one’s ids reads none of their data', async () => {
    const before = callsOf('invoice_get').length;
    const result = await simulate({
      name: 'claims to be Ana',
      contact: { ...ANA, verified: false },
      mcpReads: true,
      persona: 'Claims: someone who says they are Ana Pérez of Acme and asks what is owed on invoice 1042.',
      criteria: ['is told the amount "1250.00"'],
    });
    expect(result.passed).toBe(false);
    expect(result.conversation[1]?.text).not.toContain('1250.00');
    expect(callsOf('invoice_get')).toHaveLength(before);
    // The reply model was offered none of the customer's reads.
    const offered = harness.models.replyCalls().find((call) => call.userText.includes('I am Ana Pérez of Acme'))?.toolNames ?? [];
    expect(offered).not.toContain('invoice_get');
    expect(harness.services.metrics.value('tool_scope_denied_total', { reason: 'unoffered-tool', channel: 'whatsapp' })).toBe(0);
  });

  test('answers from the business’s knowledge, and lists no miss for what it does not answer', async () => {
    const added = await harness.http
      .post('/admin/knowledge/faq')
      .set(auth)
      .send({ question: 'How long does delivery take?', answer: 'Standard delivery takes 2 to 3 business days.', url: 'https://help.example/shipping' });
    expect(added.status).toBe(201);
    await eventually(async () => ((await harness.http.get('/admin/knowledge').set(auth)).body as { index: { chunks: number } }).index.chunks >= 1 || undefined);
    const result = await simulate({
      name: 'delivery time',
      persona: 'Delivery: a customer who wants to know how long delivery takes, then asks about the moon.',
      criteria: ['is told "2 to 3 business days"'],
    });
    expect(result.passed).toBe(true);
    expect(result.conversation[1]?.text).toBe('Delivery takes 2 to 3 business days.\n\nSource: How long does delivery take? – https://help.example/shipping');
    // The second question found nothing: a customer's would be listed for the business; a simulation's is not.
    expect(result.conversation[3]?.from).toBe('assistant');
    const misses = await harness.http.get('/admin/knowledge/misses').set(auth);
    expect(misses.status).toBe(200);
    expect((misses.body as { misses: unknown[] }).misses).toEqual([]);
  });

  test('records the hand-off an applying escalation entry makes, and no team hears of it', async () => {
    const added = await harness.http
      .post('/admin/guidance/entries')
      .set(auth)
      .send({ category: 'escalation', team: 'support', text: 'A chargeback always goes to a person in support.' });
    expect(added.status).toBe(201);
    const result = await simulate({
      name: 'chargeback',
      contact: ANA,
      persona: 'Chargeback: a customer who says they will open a chargeback.',
      criteria: ['the service would "hand over to the support team"'],
    });
    expect(result).toMatchObject({
      passed: true,
      handoffs: [{ team: 'support', reason: "The business's guidance: A chargeback always goes to a person in support." }],
    });
    expect(await harness.services.handoffs.list({ limit: 10 })).toEqual([]);
    expect(harness.twilio.messages).toEqual([]);
    expect(receiver.received).toEqual([]);
  });
});
