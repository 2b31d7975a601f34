/**
 * Measures what one steady-state turn costs the orchestrator: model calls before the reply,
 * tools offered, Redis commands on orchestrator keys (from Redis's MONITOR stream, split at the
 * judge and model calls) and prompt sizes. Used by the budget tests and `npm run bench:budget`.
 */
import type { RoleDefinition } from '../../src/orchestrator/contracts.js';
import { defineRole } from '../../src/orchestrator/define-role.js';
import { roster } from '../../roles/index.js';
import { connectBusinessMcp } from './business-mcp.js';
import { keywordJudge, type Script } from './deterministic-model.js';
import { createOrchestratorFixture, watchOrchestratorCommands, type RedisCommand } from './orchestrator-fixture.js';

type Watcher = Awaited<ReturnType<typeof watchOrchestratorCommands>>;

export interface TurnCost {
  modelCallsBeforeReply: number;
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

/** Runs the same conversation (two warm-up turns, then the measured turn) and returns what the last turn cost. */
export async function measureTurn(options: { roles: readonly RoleDefinition[]; extraReadTools: number; judge?: Script }): Promise<TurnCost> {
  const mcp = await connectBusinessMcp({ extraReadTools: options.extraReadTools });
  const watcher: Watcher = await watchOrchestratorCommands(process.env.TEST_REDIS_URL!);
  const marks: Record<string, string> = {};
  let measuring = false;
  const judge = options.judge ?? keywordJudge;
  const fixture = await createOrchestratorFixture({
    roles: options.roles,
    mcpTools: () => mcp.source.tools(),
    judge: async (call) => {
      if (measuring && !marks.judge) marks.judge = await watcher.mark(fixture.redis, 'judge');
      return judge(call);
    },
    script: async (call) => {
      if (measuring && !marks.model) marks.model = await watcher.mark(fixture.redis, 'model');
      return { text: `Answer to: ${call.userText}` };
    },
  });
  try {
    const id = `cli:budget-${Math.random().toString(36).slice(2)}`;
    await fixture.turn(id, 'how much is the Pro plan?');
    await fixture.turn(id, 'what does the Pro plan price include?');
    const callsBefore = fixture.models.calls.length;
    measuring = true;
    const start = await watcher.mark(fixture.redis, 'start');
    const result = await fixture.turn(id, 'and what is the price for Business?');
    const end = await watcher.mark(fixture.redis, 'end');
    const calls = fixture.models.calls.slice(callsBefore);
    const judgeCall = calls.find((call) => call.structured);
    const replyCall = calls.find((call) => !call.structured);
    if (result.roleId !== 'sales') throw new Error(`expected the sales role, got ${result.roleId}`);
    return {
      modelCallsBeforeReply: result.modelCalls,
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

