/**
 * Measures what one turn costs the orchestrator when it does everything a turn can: it switches
 * role (support → sales), learns facts, calls a tool and proves a fact from its result. Counted
 * where the cost is paid: model calls at the model stub (calls before the first reply call),
 * tools offered, Redis commands on orchestrator keys (from Redis's MONITOR stream, split at the
 * judge and model calls) and prompt sizes. Used by the budget tests and `npm run bench:budget`.
 */
import type { RoleDefinition } from '../../src/contracts/index.js';
import { defineRole } from '../../src/orchestrator/define-role.js';
import { Redis } from 'ioredis';
import { createActions } from '../../src/actions/actions.js';
import { createActionStore } from '../../src/actions/action-store.js';
import { createCliChannel } from '../../channels/cli/index.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { createFactStore } from '../../src/orchestrator/state/fact-store.js';
import { roster } from '../../roles/index.js';
import { connectBusinessMcp } from './business-mcp.js';
import { keywordJudge, schemaDefault, type Script } from './deterministic-model.js';
import { createOrchestratorFixture, watchOrchestratorCommands, type RedisCommand } from './orchestrator-fixture.js';

type Watcher = Awaited<ReturnType<typeof watchOrchestratorCommands>>;

export interface TurnCost {
  /** Counted at the model stub: calls made before the first reply call. */
  modelCallsBeforeReply: number;
  /** What the orchestrator says it made (must agree with the stub). */
  reportedModelCalls: number;
  roleId: string;
  /** The routed role's facts after the turn (learned by the judge, proved by tool results), read after it was measured. */
  facts: Record<string, unknown>;
  toolCalls: string[];
  offered: number;
  beforeJudge: string[];
  beforeModel: string[];
  total: string[];
  judgePromptChars: number;
  replySystemChars: number;
}

const names = (commands: RedisCommand[]) => commands.map((command) => command.name);

function between(commands: RedisCommand[], from: string | undefined, to: string): RedisCommand[] {
  const start = from ? commands.findIndex((command) => command.args[0] === from) + 1 : 0;
  const end = commands.findIndex((command) => command.args[0] === to);
  return commands.slice(start, end).filter((command) => command.name !== 'MARK');
}

/** The measured message: a new role's business, facts the judge can learn, a price to look up. */
const MEASURED_MESSAGE = 'Thanks. Separately: what does the Business plan cost for a team of 12?';

/** Learns the sales facts the measured message states, on top of any judge. */
function learningJudge(judge: Script): Script {
  return async (call) => {
    const reply = await judge(call);
    if (!('text' in reply) || !call.userText.includes('team of 12')) return reply;
    const json = JSON.parse(reply.text) as { facts?: Record<string, unknown> };
    if (!json.facts || !('role.sales.team_size' in json.facts)) return reply;
    json.facts['role.sales.interested_plan'] = 'Business';
    json.facts['role.sales.team_size'] = 12;
    return { text: JSON.stringify(json) };
  };
}

/** Runs the same conversation (two support turns, then the measured sales turn) and returns what the last turn cost. */
export async function measureTurn(options: { roles: readonly RoleDefinition[]; extraReadTools: number; judge?: Script }): Promise<TurnCost> {
  const mcp = await connectBusinessMcp({ extraReadTools: options.extraReadTools });
  const watcher: Watcher = await watchOrchestratorCommands(process.env.TEST_REDIS_URL!);
  const marks: Record<string, string> = {};
  let measuring = false;
  const judge = learningJudge(options.judge ?? keywordJudge);
  const fixture = await createOrchestratorFixture({
    roles: options.roles,
    breakers: true,
    mcpTools: () => mcp.source.tools(),
    judge: async (call) => {
      if (measuring && !marks.judge) marks.judge = await watcher.mark(fixture.redis, 'judge');
      return judge(call);
    },
    script: async (call) => {
      if (measuring && !marks.model) marks.model = await watcher.mark(fixture.redis, 'model');
      // The sales reply looks the price up first, as a real model would.
      if (call.toolNames.includes('plan_get_pricing') && call.toolResults.length === 0) return { toolCalls: [{ name: 'plan_get_pricing', input: {} }] };
      return { text: `Answer to: ${call.userText}` };
    },
  });
  try {
    const id = `cli:budget-${Math.random().toString(36).slice(2)}`;
    await fixture.turn(id, 'I cannot log in to my account');
    await fixture.turn(id, 'I still get an error when I log in');
    const callsBefore = fixture.models.calls.length;
    measuring = true;
    const start = await watcher.mark(fixture.redis, 'start');
    const result = await fixture.turn(id, MEASURED_MESSAGE);
    const end = await watcher.mark(fixture.redis, 'end');
    const calls = fixture.models.calls.slice(callsBefore);
    const judgeCall = calls.find((call) => call.structured);
    const replyCall = calls.find((call) => !call.structured);
    const firstReply = calls.findIndex((call) => !call.structured);
    return {
      modelCallsBeforeReply: firstReply === -1 ? calls.length : firstReply,
      reportedModelCalls: result.modelCalls,
      roleId: result.roleId,
      facts: (await createFactStore(fixture.redis).read(id, result.roleId)).facts,
      toolCalls: result.toolCalls.map((call) => call.toolName),
      offered: result.offeredTools.length,
      beforeJudge: names(between(watcher.commands, start, marks.judge ?? end)),
      beforeModel: names(between(watcher.commands, start, marks.model!)),
      total: names(between(watcher.commands, start, end)),
      judgePromptChars: (judgeCall?.system.length ?? 0) + (judgeCall?.userText.length ?? 0),
      replySystemChars: replyCall?.system.length ?? 0,
    };
  } finally {
    await fixture.close();
    await watcher.close();
    await mcp.close();
  }
}

export function generatedRoster(count: number): RoleDefinition[] {
  const extra = Array.from({ length: count - roster.length }, (_, index) =>
    defineRole({
      id: `specialist_${String(index).padStart(2, '0')}`,
      description: `Questions about product line ${index}: setup, usage and limits of line ${index}.`,
      instructions: `You answer questions about product line ${index}.`,
      toolScope: { effects: ['read'], categories: ['catalog'] },
      facts: {
        model: { question: `Which model of line ${index} they have.`, type: 'string' },
        units: { question: 'How many units they run.', type: 'number' },
      },
    }),
  );
  return [...roster, ...extra];
}

/**
 * A steady bookkeeper turn whose model calls a write (issue 23): the action is proposed (stored,
 * recorded, the confirmation asked) instead of run. Counts the action's keys with the
 * orchestrator's; the outbox record it appends is not orchestrator state (as a reply's is not).
 */
export async function measureProposingTurn(): Promise<TurnCost & { asked: boolean; applied: number }> {
  const mcp = await connectBusinessMcp();
  const watcher: Watcher = await watchOrchestratorCommands(process.env.TEST_REDIS_URL!);
  const actionRedis = new Redis(process.env.TEST_REDIS_URL!);
  const actions = createActions({
    store: createActionStore(actionRedis, { append: async () => undefined }),
    source: mcp.source,
    confirmTtlSeconds: 600,
    irreversibleOptIn: new Set(),
    logger: createLogger({ level: 'error', sink: () => undefined }),
    metrics: createMetrics(),
  });
  const marks: Record<string, string> = {};
  let measuring = false;
  const cli = createCliChannel({ write: () => undefined });
  const fixture = await createOrchestratorFixture({
    roles: roster,
    channel: { ...cli, identify: async () => ({ name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] }) },
    mcpTools: () => [...mcp.source.tools(), ...actions.tools()],
    judge: async (call) => {
      if (measuring && !marks.judge) marks.judge = await watcher.mark(fixture.redis, 'judge');
      const json = schemaDefault(call.schema) as Record<string, unknown>;
      if ('route' in json) json.route = 'bookkeeper';
      if ('inScope' in json) json.inScope = true;
      return { text: JSON.stringify(json) };
    },
    script: async (call) => {
      if (measuring && !marks.model) marks.model = await watcher.mark(fixture.redis, 'model');
      if (measuring && call.toolResults.length === 0)
        return { toolCalls: [{ name: 'order_reschedule_delivery', input: { orderNumber: '5001', date: '2026-12-04' } }] };
      return { text: `Answer to: ${call.userText}` };
    },
  });
  try {
    const id = `cli:budget-${Math.random().toString(36).slice(2)}`;
    await fixture.turn(id, 'Which invoices are open?');
    await fixture.turn(id, 'And the overdue one?');
    const callsBefore = fixture.models.calls.length;
    measuring = true;
    const start = await watcher.mark(fixture.redis, 'start');
    const result = await fixture.turn(id, 'Please move the delivery of order 5001 to 4 December');
    const end = await watcher.mark(fixture.redis, 'end');
    const calls = fixture.models.calls.slice(callsBefore);
    const judgeCall = calls.find((call) => call.structured);
    const replyCall = calls.find((call) => !call.structured);
    const firstReply = calls.findIndex((call) => !call.structured);
    return {
      modelCallsBeforeReply: firstReply === -1 ? calls.length : firstReply,
      reportedModelCalls: result.modelCalls,
      roleId: result.roleId,
      facts: {},
      toolCalls: result.toolCalls.map((call) => call.toolName),
      offered: result.offeredTools.length,
      beforeJudge: names(between(watcher.commands, start, marks.judge ?? end)),
      beforeModel: names(between(watcher.commands, start, marks.model!)),
      total: names(between(watcher.commands, start, end)),
      judgePromptChars: (judgeCall?.system.length ?? 0) + (judgeCall?.userText.length ?? 0),
      replySystemChars: replyCall?.system.length ?? 0,
      asked: result.text.startsWith('Please confirm: Reschedule a delivery') && result.choices?.length === 2,
      applied: mcp.server.applied.length,
    };
  } finally {
    await fixture.close();
    await watcher.close();
    await actionRedis.quit();
    await mcp.close();
  }
}
