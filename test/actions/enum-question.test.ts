/**
 * Which of a write's arguments the customer is asked for, and how their answer is read: an enum
 * (labelled by `enumNames` or `oneOf` titles when the schema has them) left out while required or
 * written outside its values; a tap only on this question's own options; a typed number, value or
 * label naming exactly one option; and, through `createActions` with an in-memory store, the
 * question's round trip (another caller or a late answer fills nothing). No services.
 */
import { describe, expect, test } from '@jest/globals';
import type { ActionRecord, ActionStore } from '../../src/actions/action-store.js';
import { createActions } from '../../src/actions/actions.js';
import { enumChoices, enumOptions, tappedOption, typedOption, unsettledEnum } from '../../src/actions/enum-question.js';
import { languageOf } from '../../src/words/language.js';
import { ToolInterrupt, type Caller, type ToolCallContext } from '../../src/contracts/tool.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import type { McpWriteTool } from '../../src/tools/mcp-tool-source.js';

const schema = {
  type: 'object',
  properties: {
    orderNumber: { type: 'string' },
    slot: { type: 'string', enum: ['morning', 'afternoon', 'evening'], title: 'Delivery slot' },
    speed: {
      oneOf: [
        { const: 'std', title: 'Standard' },
        { const: 'exp', title: 'Express (next day)' },
      ],
    },
    colour: { type: 'string', enum: ['r', 'g'], enumNames: ['Red', 'Green'] },
    region: { type: 'string', enum: ['EU', 'US'] },
    customerId: { type: 'string', enum: ['CUST-ACME'] },
  },
  required: ['orderNumber', 'slot', 'speed', 'customerId'],
};

describe('unsettledEnum', () => {
  test('asks for a required enum left out, labelled by its title', () => {
    expect(unsettledEnum(schema, { orderNumber: '1', customerId: 'CUST-ACME' }, ['customerId'])).toEqual({
      name: 'slot',
      title: 'Delivery slot',
      options: [
        { value: 'morning', label: 'morning' },
        { value: 'afternoon', label: 'afternoon' },
        { value: 'evening', label: 'evening' },
      ],
    });
  });

  test('oneOf titles and enumNames label the options; an argument without a title is named from its key', () => {
    expect(unsettledEnum(schema, { slot: 'evening' }, [])).toMatchObject({
      name: 'speed',
      title: 'Speed',
      options: [
        { value: 'std', label: 'Standard' },
        { value: 'exp', label: 'Express (next day)' },
      ],
    });
    expect(unsettledEnum(schema, { slot: 'evening', speed: 'std', colour: 'blue' }, [])).toMatchObject({
      name: 'colour',
      options: [
        { value: 'r', label: 'Red' },
        { value: 'g', label: 'Green' },
      ],
    });
  });

  test('an optional enum left out, a valid value, a scoped argument and a long or non-string enum are never asked', () => {
    expect(unsettledEnum(schema, { slot: 'morning', speed: 'exp' }, ['customerId'])).toBeUndefined();
    const long = { type: 'string', enum: Array.from({ length: 11 }, (_, index) => `v${index}`) };
    expect(enumOptions(long)).toBeUndefined();
    expect(enumOptions({ enum: [1, 2] })).toBeUndefined();
    expect(enumOptions({ type: 'string' })).toBeUndefined();
  });
});

describe('answers', () => {
  const options = unsettledEnum(schema, { slot: 'evening' }, [])!.options;

  test("a tap counts only on this question's own options", () => {
    const choices = enumChoices('q1', options);
    expect(choices.map((choice) => choice.label)).toEqual(['Standard', 'Express (next day)']);
    expect(tappedOption(choices[1]!.id, 'q1', options)).toEqual({ value: 'exp', label: 'Express (next day)' });
    expect(tappedOption('arg:q2:1', 'q1', options)).toBe('foreign');
    expect(tappedOption('arg:q1:7', 'q1', options)).toBe('foreign');
    expect(tappedOption('act:q1:confirm', 'q1', options)).toBe('foreign');
  });

  test('a typed number, value or label (any case, accents, a few words) names one option; anything else none', () => {
    expect(typedOption('2', options)?.value).toBe('exp');
    expect(typedOption('٢', options)?.value).toBe('exp');
    expect(typedOption('STANDARD', options)?.value).toBe('std');
    expect(typedOption('exp', options)?.value).toBe('exp');
    expect(typedOption('express next day please', options)?.value).toBe('exp');
    expect(typedOption('3', options)).toBeUndefined();
    expect(typedOption('what does express cost compared to the standard one', options)).toBeUndefined();
    expect(typedOption('hello', options)).toBeUndefined();
  });
});

test('a language code is one of the catalogue, else English', () => {
  expect(languageOf('es')).toBe('es');
  expect(languageOf('pt-BR')).toBe('pt');
  expect(languageOf('xx', 'FR')).toBe('fr');
  expect(languageOf('it')).toBe('en');
  expect(languageOf(undefined, 42)).toBe('en');
});

describe('the question in createActions (an in-memory store, a fake MCP source)', () => {
  const write: McpWriteTool = {
    name: 'order_set_delivery_slot',
    title: 'Set a delivery slot',
    description: 'Sets the time of day an order is delivered.',
    category: 'account',
    effect: 'reversible',
    access: { kind: 'caller', arguments: { customerId: 'customer' } },
    inputSchema: {
      jsonSchema: {
        type: 'object',
        properties: { orderNumber: { type: 'string' }, slot: { type: 'string', enum: ['morning', 'afternoon', 'evening'], title: 'Delivery slot' } },
        required: ['orderNumber', 'slot'],
      },
    },
    declared: new Set(['orderNumber', 'slot']),
  };
  const ana: Caller = {
    kind: 'contact',
    name: 'Ana Pérez',
    customerId: 'CUST-ACME',
    entities: [{ id: 'HL-2001', name: 'Acme Ltd' }],
    entity: { id: 'HL-2001', name: 'Acme Ltd' },
  };

  function setup(clock = { now: Date.parse('2026-12-01T10:00:00Z') }) {
    const records = new Map<string, ActionRecord>();
    const store: ActionStore = {
      async create(_conversation, record) {
        records.set(record._id, record);
      },
      async get(_conversation, id) {
        return records.get(id);
      },
      async ofConversation() {
        return [...records.values()];
      },
      async transition(_conversation, from, record) {
        const current = records.get(record._id);
        if (!current || !from.includes(current.state)) return { moved: false, state: current?.state };
        records.set(record._id, record);
        return { moved: true };
      },
      doneBefore: async () => undefined,
      due: async () => undefined,
      dueBy: async () => [],
      undue: async () => undefined,
    };
    const written: Record<string, unknown>[] = [];
    const metrics = createMetrics();
    const actions = createActions({
      store,
      source: {
        writeTools: () => [write],
        callWrite: async (_name, args) => {
          written.push({ ...args });
          return 'ok';
        },
      },
      confirmTtlSeconds: 600,
      irreversibleOptIn: new Set(),
      logger: createLogger({ level: 'error', sink: () => undefined }),
      metrics,
      now: () => clock.now,
    });
    const tool = actions.tools()[0]!;
    const context = (overrides: Partial<ToolCallContext> = {}): ToolCallContext => ({
      conversationId: 'whatsapp:+447700906001',
      runId: 'run-1',
      roleId: 'bookkeeper',
      channelId: 'whatsapp',
      customer: { address: 'whatsapp:+447700906001' },
      caller: ana,
      latestMessage: '',
      facts: {},
      session: {},
      metadata: {},
      signal: new AbortController().signal,
      ...overrides,
    });
    return { tool, context, records, written, metrics, clock };
  }

  test('asks in the language the model named, stores the partly frozen call, and a typed answer leads to the confirmation', async () => {
    const { tool, context, records, written } = setup();
    const asked = await tool.execute({ orderNumber: '5001', language: 'ar' }, context());
    expect(asked).toBeInstanceOf(ToolInterrupt);
    const question = asked as ToolInterrupt;
    expect(question.question).toContain('بخصوص «Set a delivery slot»، يرجى اختيار: Delivery slot');
    expect(question.data).toMatchObject({ choice: { argument: 'slot', args: { orderNumber: '5001', customerId: 'CUST-ACME' }, language: 'ar' } });
    expect(records.size).toBe(0);
    const answered = await tool.resume!('٣', question.data, context());
    expect(answered).toHaveProperty('askAgain');
    const confirmation = (answered as { askAgain: ToolInterrupt }).askAgain;
    expect(confirmation.question).toContain('يرجى التأكيد: Set a delivery slot');
    expect(confirmation.choices?.map((choice) => choice.label)).toEqual(['تأكيد', 'إلغاء']);
    expect([...records.values()].map((record) => record.args)).toEqual([{ orderNumber: '5001', slot: 'evening', customerId: 'CUST-ACME' }]);
    const outcome = await tool.resume!('نعم', confirmation.data, context());
    expect(outcome).toMatchObject({ output: { status: 'done' } });
    expect(written).toEqual([{ orderNumber: '5001', slot: 'evening', customerId: 'CUST-ACME' }]);
  });

  test('another caller, or a late answer, fills nothing', async () => {
    const { tool, context, records, metrics, clock } = setup();
    const question = (await tool.execute({ orderNumber: '5001' }, context())) as ToolInterrupt;
    const stranger: Caller = { kind: 'contact', name: 'Luis', customerId: 'CUST-BOREALIS', entities: [] };
    expect(await tool.resume!('morning', question.data, context({ caller: stranger }))).toEqual({
      reply: "That confirmation isn't valid for this request, so nothing was changed.",
    });
    expect(metrics.value('action_refusals_total', { reason: 'not-proposer', channel: 'whatsapp' })).toBe(1);
    clock.now += 601_000;
    expect(await tool.resume!('morning', question.data, context())).toEqual({
      reply: 'That confirmation has expired, so nothing was changed. Tell me if you would still like to do it.',
    });
    expect(await tool.resume!('what else?', question.data, context())).toEqual({ fresh: true });
    expect(records.size).toBe(0);
  });
});
