/**
 * Measures what one turn costs the orchestrator: the turn that does everything a turn can (it
 * switches role (support → sales), learns facts, calls a tool and proves a fact from its result),
 * a bookkeeper turn that proposes a confirmed action, and the leg where the customer's Confirm
 * tap runs it. Counted where the cost is paid: model calls at the model stub, tools offered,
 * Redis commands on orchestrator keys (from Redis's MONITOR stream, split at the judge and model
 * calls), MCP calls at the test server, and prompt sizes. One routine measures every leg. Used
 * by the budget tests and `npm run bench:budget`.
 */
import type { RoleDefinition, TurnResult } from '../../src/contracts/index.js';
import { defineRole } from '../../src/orchestrator/define-role.js';
import type { TurnGuidance } from '../../src/orchestrator/turn-guidance.js';
import { Redis } from 'ioredis';
import { createActions } from '../../src/actions/actions.js';
import { createActionStore } from '../../src/actions/action-store.js';
import { createCliChannel } from '../../channels/cli/index.js';
import { createLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { createFactStore } from '../../src/orchestrator/state/fact-store.js';
import { roster } from '../../roles/index.js';
import { connectBusinessMcp } from './business-mcp.js';
import { judgeRoutingTo, keywordJudge, type Script, type ScriptedCall } from './deterministic-model.js';
import { createOrchestratorFixture, watchOrchestratorCommands, type RedisCommand } from './orchestrator-fixture.js';

type Watcher = Awaited<ReturnType<typeof watchOrchestratorCommands>>;

export interface TurnCost {
  /** Counted at the model stub: calls made before the first reply call. */
  modelCallsBeforeReply: number;
  /** Counted at the model stub: every call the leg made (judge, fallbacks, reply steps). */
  modelCalls: number;
  /** What the orchestrator says it made (must agree with the stub). */
  reportedModelCalls: number;
  roleId: string;
  /** The routed role's facts after the turn (learned by the judge, proved by tool results), read after it was measured. */
  facts: Record<string, unknown>;
  toolCalls: string[];
  offered: number;
  /** The leg called the judge (a continuation leg does not). */
  judged: boolean;
  beforeJudge: string[];
  beforeModel: string[];
  total: string[];
  judgePromptChars: number;
  replySystemChars: number;
  /** `tools/call` requests the business's MCP server received during the leg (reads and writes). */
  mcpCalls: number;
  /** Writes that took effect on the MCP server during the leg. */
  applied: number;
  /** The leg's result (its reply, choices, tool calls). */
  result: TurnResult;
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

/** A message of the conversation: its text, and what the channel reports with it (a tap), which may depend on the reply before. */
type Message = string | ((previous: TurnResult | undefined) => { text: string; metadata?: Record<string, string> });

interface Leg {
  roles: readonly RoleDefinition[];
  extraReadTools?: number;
  /** Confirmed actions wired in (the MCP server's writes offered) and the caller linked to Acme Ltd. */
  actions?: boolean;
  /** The business's guidance hook. */
  guidance?: TurnGuidance;
  judge: Script;
  script: Script;
  /** The conversation before the measured message. */
  before: readonly Message[];
  measured: Message;
}

/** Runs a conversation and returns what its last message's leg cost: the one routine every measurement goes through. */
async function measureLeg(leg: Leg): Promise<TurnCost> {
  const mcp = await connectBusinessMcp({ extraReadTools: leg.extraReadTools ?? 0 });
  const watcher: Watcher = await watchOrchestratorCommands(process.env.TEST_REDIS_URL!);
  const actionRedis = leg.actions ? new Redis(process.env.TEST_REDIS_URL!) : undefined;
  const actions = actionRedis
    ? createActions({
        // The outbox record an action appends is not orchestrator state (as a reply's is not).
        store: createActionStore(actionRedis, { append: async () => undefined }),
        source: mcp.source,
        confirmTtlSeconds: 600,
        irreversibleOptIn: new Set(),
        logger: createLogger({ level: 'error', sink: () => undefined }),
        metrics: createMetrics(),
      })
    : undefined;
  const cli = createCliChannel({ write: () => undefined });
  const marks: Record<string, string> = {};
  let measuring = false;
  const fixture = await createOrchestratorFixture({
    roles: leg.roles,
    breakers: true,
    ...(leg.guidance ? { guidance: leg.guidance } : {}),
    ...(actions
      ? { channel: { ...cli, identify: async () => ({ name: 'Ana Pérez', customerId: 'CUST-ACME', entities: [{ id: 'HL-2001', name: 'Acme Ltd' }] }) } }
      : {}),
    mcpTools: () => [...mcp.source.tools(), ...(actions?.tools() ?? [])],
    judge: async (call) => {
      if (measuring && !marks.judge) marks.judge = await watcher.mark(fixture.redis, 'judge');
      return leg.judge(call);
    },
    script: async (call) => {
      if (measuring && !marks.model) marks.model = await watcher.mark(fixture.redis, 'model');
      return leg.script(call);
    },
  });
  try {
    const id = `cli:budget-${Math.random().toString(36).slice(2)}`;
    const say = (message: Message, previous: TurnResult | undefined) => {
      const { text, metadata } = typeof message === 'string' ? { text: message, metadata: undefined } : message(previous);
      return fixture.turn(id, text, metadata ? { metadata } : {});
    };
    let previous: TurnResult | undefined;
    for (const message of leg.before) previous = await say(message, previous);
    const callsBefore = fixture.models.calls.length;
    const mcpCallsBefore = mcp.server.calls.length;
    const appliedBefore = mcp.server.applied.length;
    measuring = true;
    const start = await watcher.mark(fixture.redis, 'start');
    const result = await say(leg.measured, previous);
    const end = await watcher.mark(fixture.redis, 'end');
    // This conversation's keys (and the shared breakers): not another suite's sharing the Redis server.
    const commands = watcher.commands.filter(
      (command) => command.name === 'MARK' || command.args.some((arg) => arg.includes(id) || arg.startsWith('asst:{model-breaker:')),
    );
    const calls = fixture.models.calls.slice(callsBefore);
    const judgeCall = calls.find((call) => call.structured);
    const replyCall = calls.find((call) => !call.structured);
    const firstReply = calls.findIndex((call) => !call.structured);
    return {
      modelCallsBeforeReply: firstReply === -1 ? calls.length : firstReply,
      modelCalls: calls.length,
      reportedModelCalls: result.modelCalls,
      roleId: result.roleId,
      facts: (await createFactStore(fixture.redis).read(id, result.roleId)).facts,
      toolCalls: result.toolCalls.map((call) => call.toolName),
      offered: result.offeredTools.length,
      judged: marks.judge !== undefined,
      beforeJudge: names(between(commands, start, marks.judge ?? end)),
      beforeModel: names(between(commands, start, marks.model ?? end)),
      total: names(between(commands, start, end)),
      judgePromptChars: (judgeCall?.system.length ?? 0) + (judgeCall?.userText.length ?? 0),
      replySystemChars: replyCall?.system.length ?? 0,
      mcpCalls: mcp.server.calls.length - mcpCallsBefore,
      applied: mcp.server.applied.length - appliedBefore,
      result,
    };
  } finally {
    await fixture.close();
    await watcher.close();
    await actionRedis?.quit();
    await mcp.close();
  }
}

/** Two support turns, then the measured sales turn: what the last turn cost. */
export async function measureTurn(options: {
  roles: readonly RoleDefinition[];
  extraReadTools: number;
  judge?: Script;
  guidance?: TurnGuidance;
}): Promise<TurnCost> {
  return measureLeg({
    roles: options.roles,
    extraReadTools: options.extraReadTools,
    ...(options.guidance ? { guidance: options.guidance } : {}),
    judge: learningJudge(options.judge ?? keywordJudge),
    // The sales reply looks the price up first, as a real model would.
    script: (call) =>
      call.toolNames.includes('plan_get_pricing') && call.toolResults.length === 0
        ? { toolCalls: [{ name: 'plan_get_pricing', input: {} }] }
        : { text: `Answer to: ${call.userText}` },
    before: ['I cannot log in to my account', 'I still get an error when I log in'],
    measured: MEASURED_MESSAGE,
  });
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

/** Every turn goes to the bookkeeper (its scope admits reversible writes). */
const bookkeeperJudge = judgeRoutingTo('bookkeeper');

const RESCHEDULE_MESSAGE = 'Please move the delivery of order 5001 to 4 December';

/** The bookkeeper's model: calls the reschedule write when asked to move a delivery, and tells the outcome in one sentence. */
const bookkeeperModel: Script = (call: ScriptedCall) => {
  const outcome = /Result: (.*)\. Continue from there\./s.exec(call.system)?.[1];
  if (outcome) return { text: `Done: ${outcome.slice(0, 200)}` };
  if (call.userText === RESCHEDULE_MESSAGE && call.toolResults.length === 0) {
    return { toolCalls: [{ name: 'order_reschedule_delivery', input: { orderNumber: '5001', date: '2026-12-04' } }] };
  }
  return { text: `Answer to: ${call.userText}` };
};

const bookkeeping = { roles: roster, actions: true, judge: bookkeeperJudge, script: bookkeeperModel } as const;

/**
 * A steady bookkeeper turn whose model calls a write: the action is proposed (stored, recorded,
 * the confirmation asked) instead of run. Counts the action's keys with the orchestrator's.
 */
export async function measureProposingTurn(): Promise<TurnCost & { asked: boolean }> {
  const cost = await measureLeg({ ...bookkeeping, before: ['Which invoices are open?', 'And the overdue one?'], measured: RESCHEDULE_MESSAGE });
  return { ...cost, asked: cost.result.text.startsWith('Please confirm: Reschedule a delivery') && cost.result.choices?.length === 2 };
}

/** The customer's tap on the Confirm button of the confirmation the turn before asked. */
const tapConfirm = (proposal: TurnResult | undefined) => {
  const confirm = proposal?.choices?.[0];
  if (!confirm?.id.endsWith(':confirm')) throw new Error(`the turn before asked no confirmation: ${proposal?.text ?? ''}`);
  return { text: confirm.label, metadata: { choice: confirm.id } };
};

/**
 * The leg after it: the customer taps Confirm, the continuation resumes the proposal without
 * judging, the write runs once on the MCP server, and the model says the outcome in one reply.
 * Measured in steady state: an earlier action in the conversation has loaded the action's Lua
 * scripts (a cold script cache adds one EVAL after the first EVALSHA, once per Redis).
 */
export async function measureConfirmationLeg(): Promise<TurnCost> {
  return measureLeg({
    ...bookkeeping,
    before: [RESCHEDULE_MESSAGE, tapConfirm, 'Which invoices are open?', RESCHEDULE_MESSAGE],
    measured: tapConfirm,
  });
}
